package gcpace

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
)

func TestNext(t *testing.T) {
	t0 := time.Unix(1767225600, 0)
	cases := []struct {
		name       string
		state      State
		writes     uint64
		now        time.Time
		wantState  State
		wantChange Change
	}{
		{name: "busy, writing", state: State{Busy: true, Writes: 3, Since: t0}, writes: 5, now: t0.Add(time.Second),
			wantState: State{Busy: true, Writes: 5, Since: t0.Add(time.Second)}, wantChange: Keep},
		{name: "busy, no write for less than RestAfter", state: State{Busy: true, Writes: 5, Since: t0}, writes: 5, now: t0.Add(RestAfter - time.Second),
			wantState: State{Busy: true, Writes: 5, Since: t0}, wantChange: Keep},
		{name: "busy, no write for RestAfter", state: State{Busy: true, Writes: 5, Since: t0}, writes: 5, now: t0.Add(RestAfter),
			wantState: State{Busy: false, Writes: 5, Since: t0.Add(RestAfter)}, wantChange: ToRest},
		{name: "starting: busy before any write", state: State{Busy: true, Since: t0}, writes: 0, now: t0.Add(RestAfter),
			wantState: State{Busy: false, Since: t0.Add(RestAfter)}, wantChange: ToRest},
		{name: "at rest, no write", state: State{Busy: false, Writes: 5, Since: t0}, writes: 5, now: t0.Add(time.Hour),
			wantState: State{Busy: false, Writes: 5, Since: t0}, wantChange: Keep},
		{name: "at rest, a write", state: State{Busy: false, Writes: 5, Since: t0}, writes: 6, now: t0.Add(time.Hour),
			wantState: State{Busy: true, Writes: 6, Since: t0.Add(time.Hour)}, wantChange: ToBusy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, change := Next(tc.state, tc.writes, tc.now)
			if diff := cmp.Diff(tc.wantState, got); diff != "" {
				t.Errorf("Next() state mismatch (-want +got):\n%s", diff)
			}
			if change != tc.wantChange {
				t.Errorf("Next() change = %d, want %d", change, tc.wantChange)
			}
		})
	}
}

// TestPacerSetsTargets runs a Pacer's steps over a burst of writes and
// the rest after it, with the runtime's calls recorded.
func TestPacerSetsTargets(t *testing.T) {
	var percents []int
	freed := 0
	p := &Pacer{log: logr.Discard(), setGCPercent: func(v int) int { percents = append(percents, v); return 0 }, freeOSMemory: func() { freed++ }}
	t0 := time.Unix(1767225600, 0)
	p.state = State{Busy: true, Since: t0}
	rt := p.Wrap(roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	}))
	send := func(method, path string) {
		t.Helper()
		req := httptest.NewRequest(method, "https://127.0.0.1:6443"+path, nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}

	for s := 1; s <= int(RestAfter/time.Second); s++ { // writes every second
		send(http.MethodPatch, "/apis/backends.infrastate.io/v1alpha1/namespaces/a/httpbackends/b/status")
		p.step(t0.Add(time.Duration(s) * time.Second))
	}
	for s := 1; s <= int(RestAfter/time.Second); s++ { // only reads and lease renewals
		send(http.MethodGet, "/api/v1/namespaces/a/secrets/p")
		send(http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/system/leases/backend-operator")
		p.step(t0.Add(RestAfter + time.Duration(s)*time.Second))
	}
	send(http.MethodPost, "/api/v1/namespaces/a/configmaps")
	p.step(t0.Add(3 * RestAfter))

	if diff := cmp.Diff([]int{RestPercent, BusyPercent}, percents); diff != "" {
		t.Errorf("targets set (-want +got):\n%s", diff)
	}
	if freed != 1 {
		t.Errorf("memory returned %d times, want once, on the way to rest", freed)
	}
	if got := p.writes.Load(); got != uint64(RestAfter/time.Second)+1 {
		t.Errorf("writes counted = %d, want %d: reads and lease renewals are not writes", got, uint64(RestAfter/time.Second)+1)
	}
}

func TestWrites(t *testing.T) {
	cases := map[string]bool{
		"GET /api/v1/namespaces/a/secrets/p":                                             false,
		"HEAD /api/v1/namespaces/a/secrets/p":                                            false,
		"OPTIONS /api/v1/namespaces/a/secrets/p":                                         false,
		"POST /api/v1/namespaces/a/configmaps":                                           true,
		"PATCH /apis/backends.infrastate.io/v1alpha1/namespaces/a/httpbackends/b/status": true,
		"DELETE /api/v1/namespaces/a/secrets/p":                                          true,
		"PUT /apis/coordination.k8s.io/v1/namespaces/system/leases/backend-operator":     false,
		"POST /apis/events.k8s.io/v1/namespaces/a/events":                                true,
	}
	for request, want := range cases {
		method, path, _ := strings.Cut(request, " ")
		if got := Writes(httptest.NewRequest(method, "https://127.0.0.1:6443"+path, nil)); got != want {
			t.Errorf("Writes(%s) = %v, want %v", request, got, want)
		}
	}
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
