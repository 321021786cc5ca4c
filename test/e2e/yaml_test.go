package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// readDocuments decodes every YAML document of the *.yaml files of dir, or
// of one file.
func readDocuments(path string) []*unstructured.Unstructured {
	files := []string{path}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		files, err = filepath.Glob(filepath.Join(path, "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		objs = append(objs, decodeDocuments(data)...)
	}
	return objs
}

// decodeDocuments decodes a multi-document YAML stream, skipping empty
// documents.
func decodeDocuments(data []byte) []*unstructured.Unstructured {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		Expect(err).NotTo(HaveOccurred())
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{}
		Expect(utilyaml.Unmarshal(doc, &obj.Object)).To(Succeed())
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}
