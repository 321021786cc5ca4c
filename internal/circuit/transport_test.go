package circuit

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/clock"

	"github.com/infrastate/backend-operator/internal/testing/silent"
)

func TestAddress(t *testing.T) {
	cases := map[string]string{
		"https://State.Example.com/team-a?token=s3cret": "https://state.example.com:443",
		"HTTP://user:pass@state.example.com:8080/x#f":   "http://state.example.com:8080",
		"http://state.example.com/x":                    "http://state.example.com:80",
		"http://[::1]:9000/x":                           "http://[::1]:9000",
	}
	for raw, want := range cases {
		t.Run(raw, func(t *testing.T) {
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, Address(u)); diff != "" {
				t.Errorf("Address(%s) (-want +got):\n%s", raw, diff)
			}
		})
	}
}

// timeoutError is a net.Error that timed out, as a dial or a response
// header timeout reports.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestOutcomeOf(t *testing.T) {
	now := time.Now()
	cases := map[string]struct {
		err      error
		deadline time.Time // zero: none
		cancel   bool
		want     Outcome
	}{
		"an answer":                   {want: Answered},
		"the context's deadline":      {err: context.DeadlineExceeded, want: Unanswered},
		"a net.Error timeout":         {err: &net.OpError{Op: "dial", Err: timeoutError{}}, want: Unanswered},
		"any error past the deadline": {err: errors.New("net/http: request canceled"), deadline: now.Add(-time.Millisecond), want: Unanswered},
		"refused":                     {err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, deadline: now.Add(time.Minute), want: Answered},
		"reset":                       {err: &net.OpError{Op: "read", Err: syscall.ECONNRESET}, want: Answered},
		"a TLS error":                 {err: x509.UnknownAuthorityError{}, want: Answered},
		"cancelled by the caller":     {err: context.Canceled, cancel: true, want: Abandoned},
		"any error once cancelled":    {err: errors.New("net/http: request canceled"), cancel: true, want: Abandoned},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			if !tc.deadline.IsZero() {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, tc.deadline)
				defer cancel()
			}
			if tc.cancel {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				cancel()
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://h/", http.NoBody)
			if err != nil {
				t.Fatal(err)
			}
			if got := outcomeOf(req, tc.err, now); got != tc.want {
				t.Errorf("outcomeOf(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

// TestTransport sends real requests over loopback through the circuits:
// a server that never answers opens its namespace's circuit after one
// attempt timeout, and then costs nothing; refusals and error answers
// open nothing.
func TestTransport(t *testing.T) {
	server := silent.Listen(t)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	var lc net.ListenConfig
	closed, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusing := "http://" + closed.Addr().String()
	closed.Close()

	b := New(clock.RealClock{})
	client := func(namespace string) *http.Client {
		base := http.DefaultTransport.(*http.Transport).Clone()
		t.Cleanup(base.CloseIdleConnections)
		return &http.Client{Timeout: 200 * time.Millisecond, Transport: b.Transport(namespace, base)}
	}
	a, other := client("team-a"), client("team-b")
	get := func(c *http.Client, u string) (time.Duration, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u+"/state?token=s3cret", http.NoBody)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return time.Since(start), err
	}

	if _, err := get(a, failing.URL); err != nil {
		t.Fatalf("an error answer: %v", err)
	}
	if _, err := get(a, refusing); err == nil || errors.Is(err, ErrOpen) {
		t.Fatalf("a refused connection: %v, want the refusal", err)
	}
	if got := b.Open(); got != 0 {
		t.Fatalf("%d circuits open after an error answer and a refusal, want none", got)
	}

	hung := server.URL()
	if _, err := get(a, hung); err == nil || errors.Is(err, ErrOpen) {
		t.Fatalf("the first request to a silent server: %v, want a timeout", err)
	}
	took, err := get(a, hung)
	if !errors.Is(err, ErrOpen) {
		t.Fatalf("the second request to a silent server: %v, want ErrOpen", err)
	}
	if took > 100*time.Millisecond {
		t.Errorf("the paused request took %s, want it to fail at once", took)
	}
	var open *OpenError
	if !errors.As(err, &open) || open.Address != hung || open.Namespace != "team-a" {
		t.Errorf("the error %v names no circuit of team-a for %s", err, hung)
	}
	if _, err := get(other, hung); err == nil || errors.Is(err, ErrOpen) {
		t.Errorf("another namespace's request: %v, want it sent (and timed out)", err)
	}
	if _, err := get(a, failing.URL); err != nil {
		t.Errorf("the namespace's request to another server: %v, want it sent", err)
	}
	// The accept loop may lag behind the client: wait for it, boundedly.
	for deadline := time.Now().Add(5 * time.Second); server.Accepted() < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := server.Accepted(); got != 2 {
		t.Errorf("the silent server accepted %d connections, want 2: one per namespace", got)
	}
}
