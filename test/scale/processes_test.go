package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
)

func TestParseRequestLine(t *testing.T) {
	type want struct {
		Method, Path string
		Status       int
		OK           bool
	}
	cases := map[string]struct {
		line string
		want want
	}{
		"a request": {
			line: `time=2026-01-01T00:00:00Z level=INFO msg=request method=GET path=/state/kill-0001-hb-00042 status=404 duration=1.2ms`,
			want: want{"GET", "/state/kill-0001-hb-00042", 404, true},
		},
		"a lock refused": {
			line: `time=2026-01-01T00:00:00Z level=INFO msg=request method=LOCK path=/state/shards-0000-hb-00001 status=423 duration=310µs`,
			want: want{"LOCK", "/state/shards-0000-hb-00001", 423, true},
		},
		"a request without path and status": {line: `level=INFO msg=request method=GET`, want: want{"GET", "", 0, true}},
		"the listening line": {
			line: `time=2026-01-01T00:00:00Z level=INFO msg="listening on http://127.0.0.1:4000" store=memory`,
		},
		"a warning": {line: `level=WARN msg="basic auth without TLS sends the password in clear text"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got want
			got.Method, got.Path, got.Status, got.OK = parseRequestLine(tc.line)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseRequestLine mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBatchOfStatePath(t *testing.T) {
	cases := map[string]string{
		"/state/kill-0001-hb-00042":    "kill",
		"/state/floor-b-0000-hb-00000": "floor-b",
		"/state/somewhere-else":        "",
		"/state/hb-00001":              "",
		"/lock/kill-0001-hb-00042":     "",
		"":                             "",
	}
	for path, want := range cases {
		if got := batchOfStatePath(path); got != want {
			t.Errorf("batchOfStatePath(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestBatchOfStatePathMatchesNewBackend(t *testing.T) {
	for _, key := range planBatch(prefixFloorCold, 3, 2).backends {
		b := newBackend(key, "http://127.0.0.1:1")
		path := strings.TrimPrefix(b.Spec.Address, "http://127.0.0.1:1")
		if got := batchOfStatePath(path); got != prefixFloorCold {
			t.Errorf("batchOfStatePath(%q) = %q, want %q", path, got, prefixFloorCold)
		}
	}
}

func TestManagerArgs(t *testing.T) {
	got := managerArgs("/tmp/kc", managerPorts{health: 1, metrics: 2, pprof: 3},
		options{probeInterval: 10 * time.Second, concurrency: 6})
	want := []string{
		"--kubeconfig", "/tmp/kc",
		"--health-probe-bind-address", "127.0.0.1:1",
		"--metrics-bind-address", "127.0.0.1:2",
		"--metrics-secure=false",
		"--pprof-bind-address", "127.0.0.1:3",
		"--allowed-address-cidrs=127.0.0.0/8,::1/128",
		"--default-probe-interval=10s",
		"--max-concurrent-reconciles=6",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("managerArgs mismatch (-want +got):\n%s", diff)
	}
}

// answerWith is an http.RoundTripper that answers every request with
// code, without any network.
type answerWith int

func (a answerWith) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: int(a), Body: io.NopCloser(strings.NewReader(""))}, nil
}

func TestRequestCounterCountsLikeTheAPIServer(t *testing.T) {
	c := newRequestCounter()
	cfg := c.wrap(&rest.Config{Host: "https://127.0.0.1:6443", QPS: 5, Burst: 10})
	if cfg.QPS != -1 {
		t.Errorf("wrapped config has QPS %v, want -1 (unthrottled)", cfg.QPS)
	}
	send := func(code int, method, url, contentType string) {
		t.Helper()
		rt := cfg.WrapTransport(answerWith(code))
		req, err := http.NewRequestWithContext(t.Context(), method, url, http.NoBody)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	send(201, "POST", "https://127.0.0.1:6443/api/v1/namespaces/ns/secrets", "application/json")
	send(201, "POST", "https://127.0.0.1:6443/api/v1/namespaces/ns/secrets", "application/json")
	send(409, "PATCH", "https://127.0.0.1:6443/apis/backends.infrastate.io/v1alpha1/namespaces/ns/httpbackends/b/status", "application/merge-patch+json")
	send(200, "GET", "https://127.0.0.1:6443/metrics", "")
	want := requestCounts{
		{Verb: "POST", Resource: "secrets", Code: "201"}:                              2,
		{Verb: "PATCH", Resource: "httpbackends", Subresource: "status", Code: "409"}: 1,
	}
	if diff := cmp.Diff(want, c.snapshot()); diff != "" {
		t.Errorf("counts mismatch (-want +got):\n%s", diff)
	}
}

func TestSince(t *testing.T) {
	post := requestKey{Verb: "POST", Resource: "configmaps", Code: "201"}
	get := requestKey{Verb: "GET", Resource: "secrets", Code: "200"}
	before := snapshot{api: requestCounts{post: 10, get: 100}, own: requestCounts{post: 5}, probes: probeCounts{"burst": 7}}
	after := snapshot{
		api: requestCounts{post: 40, get: 130}, own: requestCounts{post: 25, get: 10},
		probes: probeCounts{"burst": 19, "kill": 3},
	}
	requests, probes := since(before, after)
	if diff := cmp.Diff(requestCounts{post: 10, get: 20}, requests); diff != "" {
		t.Errorf("requests mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(probeCounts{"burst": 12, "kill": 3}, probes); diff != "" {
		t.Errorf("probes mismatch (-want +got):\n%s", diff)
	}
	if got := probes.total(); got != 15 {
		t.Errorf("total probes = %d, want 15", got)
	}
}

func TestAPIServerVersion(t *testing.T) {
	cases := map[string]struct{ body, want string }{
		"version": {body: `{"major":"1","minor":"36","gitVersion":"v1.36.3"}`, want: "v1.36.3"},
		"garbage": {body: `not json`, want: "unknown"},
		"empty":   {body: `{}`, want: "unknown"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := apiServerVersion([]byte(tc.body)); got != tc.want {
				t.Errorf("apiServerVersion = %q, want %q", got, tc.want)
			}
		})
	}
}
