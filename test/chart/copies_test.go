package chart

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCopiesAreIdentical checks that the files make manifests copies into
// the chart are byte for byte those of config/: the chart's crds/ holds
// exactly the generated CRDs, and files/ the manager's generated role and
// the admission policy.
func TestCopiesAreIdentical(t *testing.T) {
	cases := map[string]struct {
		// source and copy are directories or files, relative to the
		// repository's root.
		source, copy string
	}{
		"CRDs":             {source: "config/crd/bases", copy: "charts/backend-operator/crds"},
		"manager role":     {source: "config/rbac/role.yaml", copy: "charts/backend-operator/files/manager-role.yaml"},
		"admission policy": {source: "config/admission/validating_admission_policy.yaml", copy: "charts/backend-operator/files/validating-admission-policy.yaml"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want, got := tree(t, tc.source), tree(t, tc.copy)
			if len(want) == 0 {
				t.Fatalf("%s holds no file", tc.source)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s differs from %s: run make manifests (-want +got):\n%s", tc.copy, tc.source, diff)
			}
		})
	}
}

// tree returns the contents of a file, under its base name, or of every
// file of a directory, under their names.
func tree(t *testing.T, path string) map[string]string {
	t.Helper()
	full := filepath.Join(repoRoot, path)
	info, err := os.Stat(full)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !info.IsDir() {
		return map[string]string{"": string(readFile(t, path))}
	}
	entries, err := os.ReadDir(full)
	if err != nil {
		t.Fatalf("listing %s: %v", path, err)
	}
	files := map[string]string{}
	for _, e := range entries {
		files[e.Name()] = string(readFile(t, filepath.Join(path, e.Name())))
	}
	return files
}
