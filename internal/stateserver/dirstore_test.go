package stateserver

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// dirFiles lists the names in dir with their content.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return files
}

func TestDirStoreFiles(t *testing.T) {
	dir := t.TempDir()
	s, err := NewDirStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, New(s))

	send(t, ts.Client(), http.MethodPost, ts.URL+"/state/prod", []byte("v1"), nil)
	send(t, ts.Client(), MethodLock, ts.URL+"/state/prod", lockInfo("a"), nil)
	send(t, ts.Client(), http.MethodPost, ts.URL+"/state/prod?ID=a", []byte("v2"), nil)
	send(t, ts.Client(), http.MethodPost, ts.URL+"/state/.hidden", []byte("h"), nil)
	want := map[string]string{
		"prod.tfstate":      "v2",
		"prod.tflock":       string(lockInfo("a")),
		"%2Ehidden.tfstate": "h",
	}
	if diff := cmp.Diff(want, dirFiles(t, dir)); diff != "" {
		t.Errorf("files after lock and updates (-want +got):\n%s", diff)
	}
	for name := range want {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s has mode %v, want 0600", name, perm)
		}
	}

	send(t, ts.Client(), MethodUnlock, ts.URL+"/state/prod", lockInfo("a"), nil)
	send(t, ts.Client(), http.MethodDelete, ts.URL+"/state/.hidden", nil, nil)
	want = map[string]string{"prod.tfstate": "v2"}
	if diff := cmp.Diff(want, dirFiles(t, dir)); diff != "" {
		t.Errorf("files after unlock and delete (-want +got):\n%s", diff)
	}
}

// TestDirStoreSurvivesRestart writes through one store and server, then reads
// through new ones on the same directory: state and lock are both kept.
func TestDirStoreSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	first, err := NewDirStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, New(first))
	send(t, ts.Client(), http.MethodPost, ts.URL+"/state/x", []byte(`{"serial":1}`), nil)
	send(t, ts.Client(), MethodLock, ts.URL+"/state/x", lockInfo("holder"), nil)
	ts.Close()

	second, err := NewDirStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	ts = startServer(t, New(second))
	steps := []struct {
		method, path string
		body         []byte
		want         response
	}{
		{http.MethodGet, "/state/x", nil, response{Status: http.StatusOK, Body: `{"serial":1}`}},
		{MethodLock, "/state/x", lockInfo("other"), response{Status: http.StatusLocked, Body: string(lockInfo("holder"))}},
		{http.MethodPost, "/state/x", []byte("{}"), response{Status: http.StatusLocked, Body: string(lockInfo("holder"))}},
		{MethodUnlock, "/state/x", lockInfo("holder"), response{Status: http.StatusOK, Body: string(lockInfo("holder"))}},
		{MethodLock, "/state/x", lockInfo("other"), response{Status: http.StatusOK}},
	}
	for _, step := range steps {
		got, _ := send(t, ts.Client(), step.method, ts.URL+step.path, step.body, nil)
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Errorf("%s %s after restart (-want +got):\n%s", step.method, step.path, diff)
		}
	}
}

// TestDirStoreAtomicWrite checks the crash-safety mechanics: temporary files
// live in the store's directory and never linger, an old temporary file left
// by a crash is ignored and cleaned at start, and the stored file is only
// ever the old or the new content.
func TestDirStoreAtomicWrite(t *testing.T) {
	dir := t.TempDir()
	// What a crash in the middle of a write leaves: a torn temporary file
	// next to the intact previous state.
	if err := os.WriteFile(filepath.Join(dir, "x.tfstate"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, tempPrefix+"12345"), []byte("ne"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := NewDirStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"x.tfstate": "old"}, dirFiles(t, dir)); diff != "" {
		t.Errorf("files after start (-want +got):\n%s", diff)
	}
	if got := load(t, s, "x").State; string(got) != "old" {
		t.Errorf("state = %q, want the intact old state", got)
	}

	// A write that fails between the temporary file and the rename
	// changes nothing, and leaves no temporary file once discarded.
	var renamed []string
	renameFile = func(from, to string) error {
		renamed = append(renamed, filepath.Dir(from), filepath.Base(to))
		if data, err := os.ReadFile(from); err != nil || string(data) != "new" {
			t.Errorf("temporary file before the rename: %q, %v; want the complete new content", data, err)
		}
		return errors.New("simulated crash")
	}
	t.Cleanup(func() { renameFile = os.Rename })
	doc := stage(t, s, []byte("new"))
	err = s.Update("x", func(r *Record) error { r.State = doc; return nil })
	if err == nil {
		t.Fatal("Update succeeded, want the simulated failure")
	}
	if diff := cmp.Diff([]string{dir, "x.tfstate"}, renamed); diff != "" {
		t.Errorf("rename from (directory) and to (-want +got):\n%s", diff)
	}
	if got := load(t, s, "x").State; string(got) != "old" {
		t.Errorf("state = %q after a failed write, want the old state", got)
	}
	// The staged document is discarded when closed, as the server does.
	if err := doc.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"x.tfstate": "old"}, dirFiles(t, dir)); diff != "" {
		t.Errorf("files after a failed write (-want +got):\n%s", diff)
	}
	renameFile = os.Rename

	big := []byte(strings.Repeat("x", 1<<20))
	bigDoc := stage(t, s, big)
	if err := s.Update("x", func(r *Record) error { r.State = bigDoc; return nil }); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "x.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(big) {
		t.Errorf("stored %d bytes, want %d", len(got), len(big))
	}
}

func TestDirStoreErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewDirStore(file); err == nil {
		t.Error("NewDirStore on a file succeeded, want an error")
	}
	if _, err := NewDirStore(""); err == nil {
		t.Error("NewDirStore(\"\") succeeded, want an error")
	}

	s, err := NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// A name allowed by the server whose encoding is too long for a file.
	long := strings.Repeat("é", 90)
	if err := s.Update(long, func(*Record) error { return nil }); !errors.Is(err, ErrInvalidName) {
		t.Errorf("Update with a long name: error = %v, want ErrInvalidName", err)
	}
	ts := startServer(t, New(s))
	got, _ := send(t, ts.Client(), http.MethodGet, ts.URL+"/state/"+long, nil, nil)
	if got.Status != http.StatusBadRequest {
		t.Errorf("GET with a long name: status %d, want 400", got.Status)
	}
}

func TestEncodeName(t *testing.T) {
	cases := map[string]struct {
		name    string
		want    string
		wantErr bool
	}{
		"plain":            {name: "prod-eu_1", want: "prod-eu_1"},
		"inner dots":       {name: "a.b..c", want: "a.b..c"},
		"leading dot":      {name: ".env", want: "%2Eenv"},
		"space and colon":  {name: "a b:c", want: "a%20b%3Ac"},
		"percent":          {name: "50%", want: "50%25"},
		"unicode":          {name: "é", want: "%C3%A9"},
		"looks like a tmp": {name: ".tmp-1", want: "%2Etmp-1"},
		"empty":            {name: "", wantErr: true},
		"dot-dot":          {name: "..", wantErr: true},
		"slash":            {name: "a/b", wantErr: true},
		"backslash":        {name: `a\b`, wantErr: true},
		"NUL":              {name: "a\x00b", wantErr: true},
		"too long":         {name: strings.Repeat("%", 81), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := encodeName(tc.name)
			if (err != nil) != tc.wantErr {
				t.Fatalf("encodeName(%q) error = %v, want error %v", tc.name, err, tc.wantErr)
			}
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidName) {
					t.Errorf("error %v is not ErrInvalidName", err)
				}
				return
			}
			if got != tc.want {
				t.Errorf("encodeName(%q) = %q, want %q", tc.name, got, tc.want)
			}
		})
	}

	// Distinct names never share a file.
	names := []string{"a", "A", ".a", "%2Ea", "a.tflock", "a.tfstate", "a%2Etflock"}
	var encoded []string
	for _, n := range names {
		e, err := encodeName(n)
		if err != nil {
			t.Fatal(err)
		}
		encoded = append(encoded, e+stateSuffix, e+lockSuffix)
	}
	slices.Sort(encoded)
	if c := slices.Compact(slices.Clone(encoded)); len(c) != len(encoded) {
		t.Errorf("file names collide: %v", encoded)
	}
}
