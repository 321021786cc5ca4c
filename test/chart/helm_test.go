// Package chart tests the Helm chart in charts/backend-operator with the
// real helm binary (HELM, built by hack/install-tools.sh helm): it lints,
// its values schema refuses bad values, and what it renders matches what
// config/ deploys, RBAC rule for rule.
package chart

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// repoRoot is the repository's root, relative to this package's directory,
// where go test runs it.
const repoRoot = "../.."

// chartDir is the chart under test.
var chartDir = filepath.Join(repoRoot, "charts", "backend-operator")

// releaseName and releaseNamespace are the release the tests render.
const (
	releaseName      = "r"
	releaseNamespace = "ops"
	// prefix is the name prefix of the release's objects.
	prefix = releaseName + "-backend-operator"
)

// template renders the chart as release r in namespace ops with the given
// --set values, and fails the test when helm fails.
func template(t *testing.T, set ...string) []document {
	t.Helper()
	return splitDocuments(t, []byte(templateRelease(t, releaseName, releaseNamespace, set...)))
}

// templateRelease renders the chart as the release name in namespace with
// the given --set values, and fails the test when helm fails.
func templateRelease(t testtools.T, name, namespace string, set ...string) string {
	t.Helper()
	return render(t, testtools.HelmTemplateArgs(name, chartDir, namespace, set...)...)
}

// renders holds helm's output of every successful render by its
// arguments (joined with NUL): the chart does not change while the tests
// run, and many tests render it with the same values. The outputs are
// strings, so no caller can change what another one reads.
var renders sync.Map

// render runs helm with args, which render the chart, and returns its
// standard output; it fails the test when helm fails. A render with the
// arguments of an earlier one returns that one's output without running
// helm again.
func render(t testtools.T, args ...string) string {
	t.Helper()
	key := strings.Join(args, "\x00")
	if stdout, ok := renders.Load(key); ok {
		return stdout.(string)
	}
	stdout, stderr, err := testtools.RunHelm(t.Context(), t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	renders.Store(key, stdout)
	return stdout
}

// templateArgs are the arguments of `helm template` for the test release
// with the given --set values.
func templateArgs(set ...string) []string {
	return testtools.HelmTemplateArgs(releaseName, chartDir, releaseNamespace, set...)
}

// document is one object of a rendered manifest.
type document struct {
	Kind     string
	Metadata struct {
		Name      string
		Namespace string
	}
	// raw is the document as YAML, for decoding into its typed object.
	raw []byte
}

// splitDocuments splits a multi-document YAML stream into its objects,
// skipping empty documents.
func splitDocuments(t *testing.T, data []byte) []document {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []document
	for {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("splitting the rendered YAML: %v", err)
		}
		var d document
		if err := yaml.Unmarshal(raw, &d); err != nil {
			t.Fatalf("parsing a rendered document: %v\n%s", err, raw)
		}
		if d.Kind == "" {
			continue
		}
		d.raw = raw
		docs = append(docs, d)
	}
}

// find returns the one object of kind, namespace and name, and fails the
// test when there is none.
func find(t *testing.T, docs []document, kind, namespace, name string) document {
	t.Helper()
	for _, d := range docs {
		if d.Kind == kind && d.Metadata.Namespace == namespace && d.Metadata.Name == name {
			return d
		}
	}
	t.Fatalf("no %s %s/%s in the rendered chart; it holds %v", kind, namespace, name, names(docs))
	return document{}
}

// ofKind returns the objects of kind.
func ofKind(docs []document, kind string) []document {
	var out []document
	for _, d := range docs {
		if d.Kind == kind {
			out = append(out, d)
		}
	}
	return out
}

// names lists the objects as kind namespace/name, for failure messages.
func names(docs []document) []string {
	out := make([]string, 0, len(docs))
	for _, d := range docs {
		out = append(out, d.Kind+" "+d.Metadata.Namespace+"/"+d.Metadata.Name)
	}
	return out
}

// decode decodes a document into its typed object.
func decode[T any](t *testing.T, d document) T {
	t.Helper()
	var obj T
	if err := yaml.UnmarshalStrict(d.raw, &obj); err != nil {
		t.Fatalf("decoding %s %s: %v", d.Kind, d.Metadata.Name, err)
	}
	return obj
}

// readFile reads a file of the repository, relative to its root.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return data
}

// readObjects reads the objects of a YAML file of the repository.
func readObjects(t *testing.T, path string) []document {
	t.Helper()
	return splitDocuments(t, readFile(t, path))
}
