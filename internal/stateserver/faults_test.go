package stateserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// step is one request of a fault scenario and its expected answer.
type step struct {
	method, path string
	want         response
	wantHeader   http.Header // checked key by key when set
}

func TestFaultAnswers(t *testing.T) {
	state := []byte(`{"serial":1}`)
	ok := response{Status: http.StatusOK, Body: string(state)}
	unavailable := response{Status: http.StatusServiceUnavailable, Body: "try later"}

	cases := map[string]struct {
		opts   []Option
		faults []Fault
		steps  []step
	}{
		"status, header and body, Times requests": {
			faults: []Fault{{Status: http.StatusServiceUnavailable, Body: []byte("try later"), Header: http.Header{"Retry-After": {"3"}}, Times: 2}},
			steps: []step{
				{method: http.MethodGet, path: "/state/x", want: unavailable, wantHeader: http.Header{"Retry-After": {"3"}}},
				{method: http.MethodGet, path: "/state/x", want: unavailable},
				{method: http.MethodGet, path: "/state/x", want: ok, wantHeader: http.Header{"Retry-After": nil}},
			},
		},
		"Times 0 applies until cleared": {
			faults: []Fault{{Status: http.StatusInternalServerError}},
			steps: []step{
				{method: http.MethodGet, path: "/state/x", want: response{Status: http.StatusInternalServerError}},
				{method: http.MethodGet, path: "/state/x", want: response{Status: http.StatusInternalServerError}},
				{method: http.MethodGet, path: "/state/x", want: response{Status: http.StatusInternalServerError}},
			},
		},
		"method filter": {
			faults: []Fault{{Method: MethodLock, Status: http.StatusBadGateway}},
			steps: []step{
				{method: http.MethodGet, path: "/state/x", want: ok},
				{method: MethodLock, path: "/state/x", want: response{Status: http.StatusBadGateway}},
			},
		},
		"path filter": {
			faults: []Fault{{Path: "/state/y", Status: http.StatusTooManyRequests}},
			steps: []step{
				{method: http.MethodGet, path: "/state/x", want: ok},
				{method: http.MethodGet, path: "/state/y?ID=q", want: response{Status: http.StatusTooManyRequests}},
			},
		},
		"first matching fault wins, then the next one": {
			faults: []Fault{
				{Method: http.MethodGet, Status: http.StatusBadGateway, Times: 1},
				{Status: http.StatusGatewayTimeout, Times: 1},
			},
			steps: []step{
				{method: http.MethodGet, path: "/state/x", want: response{Status: http.StatusBadGateway}},
				{method: http.MethodGet, path: "/state/x", want: response{Status: http.StatusGatewayTimeout}},
				{method: http.MethodGet, path: "/state/x", want: ok},
			},
		},
		"faults apply before authentication": {
			opts:   []Option{WithBasicAuth("u", "p")},
			faults: []Fault{{Status: http.StatusServiceUnavailable, Body: []byte("try later"), Times: 1}},
			steps: []step{
				{method: http.MethodGet, path: "/state/x", want: unavailable},
				{method: http.MethodGet, path: "/state/x", want: response{Status: http.StatusUnauthorized, Body: "authentication required\n"}},
			},
		},
		"faults apply to unknown paths": {
			faults: []Fault{{Status: http.StatusTeapot, Times: 1}},
			steps: []step{
				{method: http.MethodGet, path: "/nowhere", want: response{Status: http.StatusTeapot}},
				{method: http.MethodGet, path: "/nowhere", want: response{Status: http.StatusNotFound, Body: "404 page not found\n"}},
			},
		},
		"a pure delay then serves normally": {
			faults: []Fault{{Delay: 10 * time.Millisecond, Times: 1}},
			steps: []step{
				{method: http.MethodGet, path: "/state/x", want: ok},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := NewMemoryStore()
			put(t, store, "x", stored{State: state})
			srv := New(store, tc.opts...)
			for _, f := range tc.faults {
				srv.InjectFault(f)
			}
			ts := startServer(t, srv)
			for i, s := range tc.steps {
				got, header := send(t, ts.Client(), s.method, ts.URL+s.path, nil, nil)
				if diff := cmp.Diff(s.want, got); diff != "" {
					t.Errorf("step %d: %s %s (-want +got):\n%s", i, s.method, s.path, diff)
				}
				for k, want := range s.wantHeader {
					if diff := cmp.Diff(want, header.Values(k)); diff != "" {
						t.Errorf("step %d: header %s (-want +got):\n%s", i, k, diff)
					}
				}
			}
		})
	}
}

func TestFaultInjectCopies(t *testing.T) {
	srv := New(NewMemoryStore())
	f := Fault{Status: http.StatusServiceUnavailable, Body: []byte("abc"), Header: http.Header{"Retry-After": {"1"}}}
	srv.InjectFault(f)
	f.Body[0] = 'X'
	f.Header.Set("Retry-After", "9")
	ts := startServer(t, srv)
	got, header := send(t, ts.Client(), http.MethodGet, ts.URL+"/state/x", nil, nil)
	if got.Body != "abc" || header.Get("Retry-After") != "1" {
		t.Errorf("got body %q and Retry-After %q, want the values at injection time", got.Body, header.Get("Retry-After"))
	}
}

func TestClearFaults(t *testing.T) {
	srv := New(NewMemoryStore())
	ts := startServer(t, srv)
	srv.InjectFault(Fault{Status: http.StatusInternalServerError})
	if got, _ := send(t, ts.Client(), http.MethodGet, ts.URL+"/state/x", nil, nil); got.Status != http.StatusInternalServerError {
		t.Fatalf("status %d with the fault, want 500", got.Status)
	}
	srv.ClearFaults()
	if got, _ := send(t, ts.Client(), http.MethodGet, ts.URL+"/state/x", nil, nil); got.Status != http.StatusNotFound {
		t.Errorf("status %d after ClearFaults, want 404", got.Status)
	}
}

func TestFaultDelay(t *testing.T) {
	const delay = 300 * time.Millisecond
	srv := New(NewMemoryStore())
	srv.InjectFault(Fault{Method: http.MethodGet, Status: http.StatusServiceUnavailable, Delay: delay, Times: 1})
	ts := startServer(t, srv)

	start := time.Now()
	got, _ := send(t, ts.Client(), http.MethodGet, ts.URL+"/state/x", nil, nil)
	if elapsed := time.Since(start); elapsed < delay {
		t.Errorf("answered after %v, want at least %v", elapsed, delay)
	}
	if got.Status != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503", got.Status)
	}

	// A client that gives up during the delay gets an error, and the
	// server lets go of the request.
	srv.InjectFault(Fault{Delay: time.Hour, Times: 1})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/state/x", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := ts.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("request during an hour-long delay answered %d, want a timeout", resp.StatusCode)
	}
	// ts.Close in the cleanup blocks until every handler returned: the test
	// would hang if the delayed handler did not notice the cancellation.
}

func TestFaultDrop(t *testing.T) {
	srv := New(NewMemoryStore())
	srv.InjectFault(Fault{Method: http.MethodPost, Drop: true, Times: 2})
	srv.InjectFault(Fault{Method: http.MethodGet, Drop: true, Delay: 50 * time.Millisecond, Times: 1})
	ts := startServer(t, srv)
	// No keep-alive: Go's transport would otherwise resend the dropped GET.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	post := func() error {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/state/x", http.NoBody)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for i := range 2 {
		if err := post(); err == nil {
			t.Errorf("POST %d on a dropping server succeeded, want a transport error", i)
		}
	}
	if err := post(); err != nil {
		t.Errorf("third POST: %v, want success once the fault is used up", err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/state/x", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("delayed drop of a GET answered %d, want a transport error", resp.StatusCode)
	}
	if got := srv.Requests(http.MethodPost, "/state/x"); got != 3 {
		t.Errorf("Requests(POST) = %d, want 3", got)
	}
}

func TestRequests(t *testing.T) {
	srv := New(NewMemoryStore(), WithBasicAuth("u", "p"))
	srv.InjectFault(Fault{Method: MethodLock, Status: http.StatusServiceUnavailable, Times: 1})
	ts := startServer(t, srv)
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/state/a"},
		{http.MethodGet, "/state/a?ID=1"},
		{http.MethodPost, "/state/a"},
		{MethodLock, "/state/a"},
		{http.MethodGet, "/state/b"},
		{http.MethodGet, "/elsewhere"},
	} {
		send(t, ts.Client(), r.method, ts.URL+r.path, nil, nil)
	}
	cases := map[string]struct {
		method, path string
		want         int
	}{
		"method and path":      {method: http.MethodGet, path: "/state/a", want: 2},
		"any method":           {path: "/state/a", want: 4},
		"any path":             {method: http.MethodGet, want: 4},
		"everything":           {want: 6},
		"faulted requests":     {method: MethodLock, path: "/state/a", want: 1},
		"unknown paths":        {path: "/elsewhere", want: 1},
		"never requested":      {method: http.MethodDelete, want: 0},
		"query is not matched": {path: "/state/a?ID=1", want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := srv.Requests(tc.method, tc.path); got != tc.want {
				t.Errorf("Requests(%q, %q) = %d, want %d", tc.method, tc.path, got, tc.want)
			}
		})
	}
	srv.ResetRequests()
	if got := srv.Requests("", ""); got != 0 {
		t.Errorf("Requests after ResetRequests = %d, want 0", got)
	}
}

// TestFaultDropHTTP2 drops a request on an HTTP/2 connection, where the
// connection cannot be hijacked: the stream is reset instead, and the server
// keeps serving.
func TestFaultDropHTTP2(t *testing.T) {
	srv := New(NewMemoryStore())
	srv.InjectFault(Fault{Method: http.MethodPost, Drop: true, Times: 1})
	ts := httptest.NewUnstartedServer(srv)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/state/x", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ts.Client().Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("dropped POST answered %d (%s), want a transport error", resp.StatusCode, resp.Proto)
	}
	got, _ := send(t, ts.Client(), http.MethodGet, ts.URL+"/state/x", nil, nil)
	if got.Status != http.StatusNotFound {
		t.Errorf("GET after the drop: %d, want 404", got.Status)
	}
}

// TestRequestCountingStart checks when Requests starts counting: never
// without faults (so that serving many names keeps no counters), from the
// first injected fault, or from the start with WithRequestCounting.
func TestRequestCountingStart(t *testing.T) {
	cases := map[string]struct {
		opts        []Option
		injectAfter int // inject a fault that never matches after this many requests; -1 never
		want        int
	}{
		"no fault":                        {injectAfter: -1, want: 0},
		"counting from the first fault":   {injectAfter: 2, want: 3},
		"counting from the start":         {opts: []Option{WithRequestCounting()}, injectAfter: -1, want: 5},
		"counting from the start, faults": {opts: []Option{WithRequestCounting()}, injectAfter: 2, want: 5},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := New(NewMemoryStore(), tc.opts...)
			for i := range 5 {
				if i == tc.injectAfter {
					srv.InjectFault(Fault{Path: "/never", Status: http.StatusTeapot})
				}
				serveDirect(t.Context(), srv, http.MethodGet, "/state/n"+strconv.Itoa(i), http.NoBody, nil)
			}
			if got := srv.Requests("", ""); got != tc.want {
				t.Errorf("Requests = %d, want %d", got, tc.want)
			}
			if got := len(srv.faults.counts); got != tc.want {
				t.Errorf("%d counters, want %d", got, tc.want)
			}
		})
	}
}
