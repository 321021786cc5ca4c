package render

import (
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// update rewrites the golden files: go test ./internal/render -update.
var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

// goldenFiles lists the rendered files with their golden file names.
func goldenFiles(f Files) map[string][]byte {
	return map[string][]byte{
		BackendTFKey:        f.BackendTF,
		BackendTFJSONKey:    f.BackendTFJSON,
		BackendTFBackendKey: f.BackendTFBackend,
	}
}

// checkGolden compares got with testdata/<dir>/<name> byte for byte, or
// rewrites the file with -update.
func checkGolden(t *testing.T, dir string, f Files) {
	t.Helper()
	for name, got := range goldenFiles(f) {
		checkGoldenFile(t, filepath.Join("testdata", dir, name), got)
	}
}

// checkGoldenFile compares got with the file at path byte for byte, or
// rewrites the file with -update.
func checkGoldenFile(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the golden file (run `go test ./internal/render -update` to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from %s (-want +got; `go test ./internal/render -update` rewrites it):\n%s", filepath.Base(path), path, diff)
	}
}

// checkNoStaleGolden fails when testdata/<kind> holds a directory that is
// not a case any more, so that renamed cases do not leave files behind.
func checkNoStaleGolden[S any](t *testing.T, kind string, cases map[string]S) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("testdata", kind))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := cases[e.Name()]; !ok {
			if *update {
				if err := os.RemoveAll(filepath.Join("testdata", kind, e.Name())); err != nil {
					t.Fatal(err)
				}
				continue
			}
			t.Errorf("testdata/%s/%s is not a test case any more: delete it or run with -update", kind, e.Name())
		}
	}
}

func TestHTTPFilesGolden(t *testing.T) {
	cases := httpCases()
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			f, err := HTTPFiles(spec)
			if err != nil {
				t.Fatalf("HTTPFiles: %v", err)
			}
			checkGolden(t, filepath.Join("http", name), f)
		})
	}
	checkNoStaleGolden(t, "http", cases)
}

func TestCosFilesGolden(t *testing.T) {
	cases := cosCases()
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			f, err := CosFiles(spec, testRegion)
			if err != nil {
				t.Fatalf("CosFiles: %v", err)
			}
			checkGolden(t, filepath.Join("cos", name), f)
		})
	}
	checkNoStaleGolden(t, "cos", cases)
}

// TestDefaultsRenderNothing checks that values equal to Terraform's
// defaults render exactly like the minimal spec.
func TestDefaultsRenderNothing(t *testing.T) {
	cases := map[string]struct {
		render  func() (Files, error)
		minimal func() (Files, error)
	}{
		"http": {
			render:  func() (Files, error) { return HTTPFiles(httpCases()["api_defaults"]) },
			minimal: func() (Files, error) { return HTTPFiles(httpCases()["minimal"]) },
		},
		"http methods without addresses": {
			render:  func() (Files, error) { return HTTPFiles(httpCases()["methods_without_addresses"]) },
			minimal: func() (Files, error) { return HTTPFiles(httpCases()["minimal"]) },
		},
		"cos key": {
			render:  func() (Files, error) { return CosFiles(cosCases()["key_default"], testRegion) },
			minimal: func() (Files, error) { return CosFiles(cosCases()["minimal"], testRegion) },
		},
		"cos acl": {
			render:  func() (Files, error) { return CosFiles(cosCases()["acl_default"], testRegion) },
			minimal: func() (Files, error) { return CosFiles(cosCases()["minimal"], testRegion) },
		},
		"cos credentials reference": {
			render:  func() (Files, error) { return CosFiles(cosCases()["credentials_reference"], testRegion) },
			minimal: func() (Files, error) { return CosFiles(cosCases()["minimal"], testRegion) },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.render()
			if err != nil {
				t.Fatal(err)
			}
			want, err := tc.minimal()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("defaults changed the files (-minimal +got):\n%s", diff)
			}
		})
	}
}

// TestFilesData checks the ConfigMap keys.
func TestFilesData(t *testing.T) {
	f := Files{BackendTF: []byte("tf"), BackendTFJSON: []byte("json"), BackendTFBackend: []byte("tfbackend")}
	want := map[string]string{"backend.tf": "tf", "backend.tf.json": "json", "backend.tfbackend": "tfbackend"}
	if diff := cmp.Diff(want, f.Data()); diff != "" {
		t.Errorf("Data() (-want +got):\n%s", diff)
	}
	keys := slices.Sorted(maps.Keys(goldenFiles(f)))
	if diff := cmp.Diff([]string{"backend.tf", "backend.tf.json", "backend.tfbackend"}, keys); diff != "" {
		t.Errorf("golden file names (-want +got):\n%s", diff)
	}
}
