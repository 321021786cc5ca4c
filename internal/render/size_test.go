package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// keysSize is the bytes the three file names take in ConfigMap data.
const keysSize = len(BackendTFKey) + len(BackendTFJSONKey) + len(BackendTFBackendKey)

// TestFilesDataSize checks that DataSize counts what the API server counts
// (every key and value of the ConfigMap data) and that CheckDataSize
// refuses exactly what it would refuse.
func TestFilesDataSize(t *testing.T) {
	// filesOfSize returns files whose ConfigMap data is n bytes.
	filesOfSize := func(n int) Files {
		n -= keysSize
		return Files{
			BackendTF:        []byte(strings.Repeat("t", n/3)),
			BackendTFJSON:    []byte(strings.Repeat("j", n/3)),
			BackendTFBackend: []byte(strings.Repeat("b", n-2*(n/3))),
		}
	}
	cases := map[string]struct {
		files    Files
		wantSize int
		wantErr  bool
	}{
		"empty":         {files: Files{}, wantSize: keysSize},
		"small":         {files: Files{BackendTF: []byte("tf"), BackendTFJSON: []byte("json"), BackendTFBackend: []byte("tfbackend")}, wantSize: keysSize + 15},
		"multi-byte":    {files: Files{BackendTF: []byte("ü日本🙂")}, wantSize: keysSize + 2 + 3 + 3 + 4},
		"at the limit":  {files: filesOfSize(MaxConfigMapDataBytes), wantSize: 1048576},
		"one byte over": {files: filesOfSize(MaxConfigMapDataBytes + 1), wantSize: 1048577, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.files.DataSize(); got != tc.wantSize {
				t.Errorf("DataSize() = %d, want %d", got, tc.wantSize)
			}
			// The API server's count, from the ConfigMap itself.
			apiSize := 0
			for k, v := range ConfigMap(testOwner, "c", tc.files).Data {
				apiSize += len(k) + len(v)
			}
			if got := tc.files.DataSize(); got != apiSize {
				t.Errorf("DataSize() = %d, the ConfigMap data has %d bytes", got, apiSize)
			}
			err := tc.files.CheckDataSize()
			if gotErr := err != nil; gotErr != tc.wantErr {
				t.Fatalf("CheckDataSize() = %v, want an error: %t", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, ErrRenderTooLarge) {
				t.Errorf("error %q is not ErrRenderTooLarge", err)
			}
		})
	}
}

// TestRenderTooLarge checks that HTTPFiles and CosFiles refuse, before any
// ConfigMap is built, a rendering that no ConfigMap could hold, and that
// the error neither quotes the files nor the spec.
func TestRenderTooLarge(t *testing.T) {
	// Each file holds the long value once: a third of the limit each
	// fits, a half does not.
	long := func(n int) string { return secretMarker + strings.Repeat("v", n-len(secretMarker)) }
	cases := map[string]struct {
		render  func() (Files, error)
		wantErr bool
	}{
		"http fits": {
			render: func() (Files, error) {
				return HTTPFiles(backendsv1alpha1.HttpBackendSpec{Address: testAddress, Username: long(MaxConfigMapDataBytes / 4)})
			},
		},
		"http too large": {
			render: func() (Files, error) {
				return HTTPFiles(backendsv1alpha1.HttpBackendSpec{Address: testAddress, Username: long(MaxConfigMapDataBytes / 2)})
			},
			wantErr: true,
		},
		"cos fits": {
			render: func() (Files, error) {
				return CosFiles(backendsv1alpha1.CosBackendSpec{Bucket: testBucket, Prefix: long(MaxConfigMapDataBytes / 4)}, testRegion)
			},
		},
		"cos too large": {
			render: func() (Files, error) {
				return CosFiles(backendsv1alpha1.CosBackendSpec{Bucket: testBucket, Prefix: long(MaxConfigMapDataBytes / 2)}, testRegion)
			},
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, err := tc.render()
			if !tc.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				if f.DataSize() > MaxConfigMapDataBytes {
					t.Errorf("DataSize() = %d, more than %d", f.DataSize(), MaxConfigMapDataBytes)
				}
				return
			}
			if !errors.Is(err, ErrRenderTooLarge) {
				t.Fatalf("error %v is not ErrRenderTooLarge", err)
			}
			if diff := cmp.Diff(Files{}, f); diff != "" {
				t.Errorf("files returned with the error (-want +got):\n%s", diff)
			}
			if strings.Contains(err.Error(), secretMarker) {
				t.Errorf("error %q quotes the spec", err)
			}
		})
	}
}
