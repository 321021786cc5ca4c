package stateclient

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/infrastate/backend-operator/internal/circuit"
	"github.com/infrastate/backend-operator/internal/testing/silent"
)

// TestCircuitStopsRetries checks that the retries of a call see the
// circuit a timed-out attempt opened: a server that never answers costs
// one attempt timeout and one connection, not RetryMax+1 of them, and the
// next calls of the namespace fail at once, without a connection.
func TestCircuitStopsRetries(t *testing.T) {
	t.Parallel()
	hung := silent.Listen(t)
	breakers := circuit.New(clock.RealClock{})
	cfg := fastConfig(hung.URL())
	cfg.Address += "?token=s3cret-query-value"
	cfg.AttemptTimeout = 200 * time.Millisecond
	wrap := func(rt http.RoundTripper) http.RoundTripper { return breakers.Transport("team-a", rt) }
	c := mustNew(t, cfg, WithWrapTransport(wrap))

	ctx, cancel := context.WithCancel(context.Background()) // no deadline: only the attempt timeout may end it
	t.Cleanup(cancel)
	_, err := fetchAll(ctx, c)
	var re *RetryError
	if !errors.As(err, &re) || re.Attempts != 2 {
		t.Fatalf("first call: %v, want a *RetryError after 2 attempts: one timed out, one paused", err)
	}
	if !errors.Is(err, circuit.ErrOpen) {
		t.Errorf("first call: %v, want its last attempt paused (circuit.ErrOpen)", err)
	}
	start := time.Now()
	_, err = fetchAll(ctx, c)
	if took := time.Since(start); !errors.Is(err, circuit.ErrOpen) || took > 100*time.Millisecond {
		t.Errorf("second call: %v after %s, want circuit.ErrOpen at once", err, took)
	}
	if re, ok := errors.AsType[*RetryError](err); !ok || re.Attempts != 1 {
		t.Errorf("second call: %v, want a *RetryError after 1 attempt", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error %q holds the address's query", err)
	}
	if got := hung.Accepted(); got > 1 {
		t.Errorf("the server accepted %d connections, want 1", got)
	}
	c.CloseIdleConnections() // through the wrapper, without a panic
}
