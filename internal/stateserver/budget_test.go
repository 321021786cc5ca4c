package stateserver

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestMemoryStoreBudget runs requests over loopback TCP against a memory
// store with a 1 MiB budget: a write that would take it past the budget is
// refused with 507 and a message, changes nothing, and the server keeps
// serving; deleting or replacing states gives their bytes back.
func TestMemoryStoreBudget(t *testing.T) {
	const (
		budget = 1 << 20
		kib    = 1 << 10
	)
	type step struct {
		method, path string
		size         int  // bytes of the body sent, filled with the path's last letter
		chunked      bool // send the body without a Content-Length
		want         int
	}
	cases := map[string]struct {
		steps []step
		// wantUsed is the store's use after the steps: only what it keeps.
		wantUsed int64
	}{
		"a state past the budget is refused, the others are kept": {
			steps: []step{
				{method: http.MethodPost, path: "/state/a", size: 600 * kib, want: http.StatusOK},
				{method: http.MethodPost, path: "/state/b", size: 600 * kib, want: http.StatusInsufficientStorage},
				{method: http.MethodGet, path: "/state/a", size: 600 * kib, want: http.StatusOK},
				{method: http.MethodGet, path: "/state/b", want: http.StatusNotFound},
				{method: http.MethodPost, path: "/state/c", size: 300 * kib, want: http.StatusOK},
			},
			wantUsed: 900 * kib,
		},
		"a chunked body is refused once it passes the budget": {
			steps: []step{
				{method: http.MethodPost, path: "/state/a", size: budget + 1, chunked: true, want: http.StatusInsufficientStorage},
				{method: http.MethodGet, path: "/state/a", want: http.StatusNotFound},
				{method: http.MethodPost, path: "/state/a", size: budget, want: http.StatusOK},
			},
			wantUsed: budget,
		},
		"a deleted state gives its bytes back": {
			steps: []step{
				{method: http.MethodPost, path: "/state/a", size: 700 * kib, want: http.StatusOK},
				{method: http.MethodPost, path: "/state/b", size: 700 * kib, want: http.StatusInsufficientStorage},
				{method: http.MethodDelete, path: "/state/a", want: http.StatusOK},
				{method: http.MethodPost, path: "/state/b", size: 700 * kib, want: http.StatusOK},
				{method: http.MethodGet, path: "/state/b", size: 700 * kib, want: http.StatusOK},
			},
			wantUsed: 700 * kib,
		},
		"a replaced state gives its bytes back": {
			steps: []step{
				{method: http.MethodPost, path: "/state/a", size: 400 * kib, want: http.StatusOK},
				{method: http.MethodPost, path: "/state/a", size: 500 * kib, want: http.StatusOK},
				{method: http.MethodPost, path: "/state/a", size: 300 * kib, want: http.StatusOK},
				{method: http.MethodPost, path: "/state/b", size: 700 * kib, want: http.StatusOK},
				{method: http.MethodGet, path: "/state/a", size: 300 * kib, want: http.StatusOK},
			},
			wantUsed: 1000 * kib,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := NewMemoryStore(WithMemoryBudget(budget))
			ts := startServer(t, New(store))
			for _, s := range tc.steps {
				content := bytes.Repeat([]byte(s.path[len(s.path)-1:]), s.size)
				var body []byte
				if s.method != http.MethodGet && s.method != http.MethodDelete {
					body = content
				}
				got := sendStep(t, ts.Client(), s.method, ts.URL+s.path, body, s.chunked)
				if got.Status != s.want {
					t.Fatalf("%s %s (%d bytes): status %d %q, want %d", s.method, s.path, s.size, got.Status, got.Body, s.want)
				}
				switch {
				case s.want == http.StatusInsufficientStorage && !strings.Contains(got.Body, "budget of 1048576 bytes"):
					t.Errorf("%s %s: body %q does not name the budget", s.method, s.path, got.Body)
				case s.method == http.MethodGet && s.want == http.StatusOK && got.Body != string(content):
					t.Errorf("GET %s: %d bytes, want the %d stored", s.path, len(got.Body), len(content))
				}
			}
			if got := store.Used(); got != tc.wantUsed {
				t.Errorf("Used() = %d after the requests, want %d", got, tc.wantUsed)
			}
		})
	}
}

// sendStep sends one request like send; with chunked, the body goes
// without a Content-Length (nor a Content-MD5), as a stream of unknown
// length.
func sendStep(t *testing.T, client *http.Client, method, url string, body []byte, chunked bool) response {
	t.Helper()
	if !chunked {
		got, _ := send(t, client, method, url, body, nil)
		return got
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, io.MultiReader(bytes.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := do(t, client, req)
	return got
}

// TestTruncatedUploadIsNotStored sends part of a declared body over
// loopback TCP, without Content-MD5, and half-closes the connection: the
// upload is refused with 400 and the state is not replaced, whatever the
// store.
func TestTruncatedUploadIsNotStored(t *testing.T) {
	cases := map[string]func(t *testing.T) Store{
		"memory": func(*testing.T) Store { return NewMemoryStore() },
		"dir": func(t *testing.T) Store {
			t.Helper()
			d, err := NewDirStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
	}
	for name, newStore := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, New(newStore(t)))
			if got, _ := send(t, ts.Client(), http.MethodPost, ts.URL+"/state/x", []byte("old"), nil); got.Status != http.StatusOK {
				t.Fatalf("POST the old state: %+v", got)
			}
			var d net.Dialer
			conn, err := d.DialContext(t.Context(), "tcp", ts.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, "POST /state/x HTTP/1.1\r\nHost: s\r\nContent-Length: 100\r\n\r\n{\"version\":"); err != nil {
				t.Fatal(err)
			}
			if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("truncated POST: status %d, want 400", resp.StatusCode)
			}
			if got, _ := send(t, ts.Client(), http.MethodGet, ts.URL+"/state/x", nil, nil); got != (response{Status: http.StatusOK, Body: "old"}) {
				t.Errorf("GET after the truncated POST: %+v, want the old state", got)
			}
		})
	}
}
