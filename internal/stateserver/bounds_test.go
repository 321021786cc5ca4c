package stateserver

import (
	"bytes"
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// serveDirect runs one request through srv without a network and returns
// the status.
func serveDirect(ctx context.Context, srv *Server, method, target string, body io.Reader, header http.Header) int {
	req := httptest.NewRequestWithContext(ctx, method, target, body)
	maps.Copy(req.Header, header)
	w := &countingWriter{header: http.Header{}}
	srv.ServeHTTP(w, req)
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// countingWriter is an http.ResponseWriter that keeps only the status and
// the number of body bytes, so that measuring allocations does not count a
// recorded copy of the body.
type countingWriter struct {
	header http.Header
	status int
	n      int64
}

func (w *countingWriter) Header() http.Header { return w.header }

func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *countingWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += int64(len(b))
	return len(b), nil
}

// TestBodiesAreNotHeldTwice uploads and downloads a 32 MiB state and measures
// what the server allocates: the directory store streams through files and
// allocates little whatever the size, and the memory store keeps one copy of
// the body and none more to serve it. Not parallel: it reads global
// allocation counters.
func TestBodiesAreNotHeldTwice(t *testing.T) {
	const size = 32 << 20
	body := bytes.Repeat([]byte("s"), size)
	header := http.Header{"Content-Md5": {md5Header(body)}}
	cases := map[string]struct {
		store                  func(t *testing.T) Store
		maxUpload, maxDownload uint64
	}{
		"memory": {
			store:     func(*testing.T) Store { return NewMemoryStore() },
			maxUpload: size + size/8, maxDownload: 1 << 20,
		},
		"dir": {
			store: func(t *testing.T) Store {
				t.Helper()
				d, err := NewDirStore(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				return d
			},
			maxUpload: 1 << 20, maxDownload: 1 << 20,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := New(tc.store(t))
			var status int
			uploaded := testtools.AllocatedBy(func() {
				status = serveDirect(t.Context(), srv, http.MethodPost, "/state/big", bytes.NewReader(body), header)
			})
			if status != http.StatusOK {
				t.Fatalf("POST: status %d", status)
			}
			var w countingWriter
			downloaded := testtools.AllocatedBy(func() {
				w = countingWriter{header: http.Header{}}
				srv.ServeHTTP(&w, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/state/big", http.NoBody))
			})
			if w.status != http.StatusOK || w.n != size {
				t.Fatalf("GET: status %d, %d bytes; want 200, %d", w.status, w.n, size)
			}
			t.Logf("allocated %d KiB to upload and %d KiB to download %d KiB", uploaded>>10, downloaded>>10, size>>10)
			if uploaded > tc.maxUpload {
				t.Errorf("the upload allocated %d KiB, want at most %d KiB", uploaded>>10, tc.maxUpload>>10)
			}
			if downloaded > tc.maxDownload {
				t.Errorf("the download allocated %d KiB, want at most %d KiB", downloaded>>10, tc.maxDownload>>10)
			}
		})
	}
}

// zeros is an endless body that counts the bytes read from it.
type zeros struct {
	mu   sync.Mutex
	read int64
	max  int64
}

func (z *zeros) Read(p []byte) (int, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.read >= z.max {
		return 0, io.EOF
	}
	n := int64(len(p))
	n = min(n, z.max-z.read)
	clear(p[:n])
	z.read += n
	return int(n), nil
}

// TestStateBodyLimit sends bodies over the size limit: a declared length is
// refused before reading anything, a chunked body once the limit is passed,
// and neither changes the state or leaves a temporary file.
func TestStateBodyLimit(t *testing.T) {
	cases := map[string]struct {
		declared bool
		wantRead func(int64) bool
	}{
		"declared length over the limit": {declared: true, wantRead: func(n int64) bool { return n == 0 }},
		"chunked body over the limit":    {wantRead: func(n int64) bool { return n > maxStateBytes }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			store, err := NewDirStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			srv := New(store)
			if status := serveDirect(t.Context(), srv, http.MethodPost, "/state/x", strings.NewReader("old"), nil); status != http.StatusOK {
				t.Fatalf("POST the old state: %d", status)
			}
			body := &zeros{max: maxStateBytes + 1}
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/state/x", body)
			if tc.declared {
				req.ContentLength = body.max
			}
			w := &countingWriter{header: http.Header{}}
			srv.ServeHTTP(w, req)
			if w.status != http.StatusRequestEntityTooLarge {
				t.Errorf("status %d, want 413", w.status)
			}
			if !tc.wantRead(body.read) {
				t.Errorf("the server read %d bytes of the body", body.read)
			}
			if diff := cmp.Diff(map[string]string{"x.tfstate": "old"}, dirFiles(t, dir)); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPerNameTablesDoNotGrow serves many requests on distinct names, most of
// them GETs of names that never existed: afterwards no table of the server
// or of the stores holds an entry for them.
func TestPerNameTablesDoNotGrow(t *testing.T) {
	const names = 5000
	mem := NewMemoryStore()
	dir, err := NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		store  Store
		tables func(*Server) map[string]int
	}{
		"memory": {store: mem, tables: func(srv *Server) map[string]int {
			return map[string]int{"records": len(mem.records), "request counters": len(srv.faults.counts)}
		}},
		"dir": {store: dir, tables: func(srv *Server) map[string]int {
			return map[string]int{"name mutexes": dir.names.len(), "request counters": len(srv.faults.counts)}
		}},
	}
	for storeName, tc := range cases {
		t.Run(storeName, func(t *testing.T) {
			srv := New(tc.store)
			var wg sync.WaitGroup
			for worker := range 4 {
				wg.Go(func() {
					for i := worker; i < names; i += 4 {
						path := "/state/n-" + strconv.Itoa(i)
						if got := serveDirect(t.Context(), srv, http.MethodGet, path, http.NoBody, nil); got != http.StatusNotFound {
							t.Errorf("GET %s: %d", path, got)
						}
						if i%50 != 0 {
							continue
						}
						// A full cycle that leaves nothing behind.
						id := "id-" + strconv.Itoa(i)
						for _, r := range []struct {
							method, query string
							body          string
						}{
							{MethodLock, "", string(lockInfo(id))},
							{http.MethodPost, "?ID=" + id, "{}"},
							{http.MethodDelete, "?ID=" + id, ""},
							{MethodUnlock, "", string(lockInfo(id))},
						} {
							if got := serveDirect(t.Context(), srv, r.method, path+r.query, strings.NewReader(r.body), nil); got != http.StatusOK {
								t.Errorf("%s %s: %d", r.method, path, got)
							}
						}
					}
				})
			}
			wg.Wait()
			empty := map[string]int{}
			for k := range tc.tables(srv) {
				empty[k] = 0
			}
			if diff := cmp.Diff(empty, tc.tables(srv)); diff != "" {
				t.Errorf("entries left after %d names (-want +got):\n%s", names, diff)
			}
			if storeName == "dir" {
				if entries, err := os.ReadDir(dir.Dir()); err != nil || len(entries) != 0 {
					t.Errorf("files left in the directory: %d, %v", len(entries), err)
				}
			}
		})
	}
}
