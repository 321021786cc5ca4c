package stateclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/infrastate/backend-operator/internal/testing/silent"
)

// stalledBody answers 200 with a Content-Length, sends part of the body
// and stalls until the client goes away or the test ends.
func stalledBody(stop <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		_, _ = w.Write([]byte(`{"version":4,`))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}
}

// isTimeout reports whether a caller can classify err as a timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// TestAttemptTimeout checks that Config.AttemptTimeout bounds each attempt
// from the dial to the end of the body: a server that accepts and never
// answers, a body that stalls and a dial that never completes all end in
// a timeout error, after the retries where the attempt had no answer yet.
func TestAttemptTimeout(t *testing.T) {
	t.Parallel()
	fetch := func(ctx context.Context, c *Client) error { _, err := fetchAll(ctx, c); return err }
	summary := func(ctx context.Context, c *Client) error { _, err := c.FetchSummary(ctx, nil); return err }
	lock := func(ctx context.Context, c *Client) error {
		_, err := c.Lock(ctx, NewLockInfo("OperationTypeApply", "me"))
		return err
	}
	cases := map[string]struct {
		server       string // "silent" or "stalled body"
		dialHangs    bool
		call         func(context.Context, *Client) error
		wantAttempts int // of the *RetryError; 0: the error is not one
	}{
		"fetch, never answered":      {server: "silent", call: fetch, wantAttempts: 3},
		"summary, never answered":    {server: "silent", call: summary, wantAttempts: 3},
		"lock, never answered":       {server: "silent", call: lock, wantAttempts: 3},
		"fetch, stalled body":        {server: "stalled body", call: fetch},
		"summary, stalled body":      {server: "stalled body", call: summary},
		"fetch, dial never finishes": {server: "silent", dialHangs: true, call: fetch, wantAttempts: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var (
				addr string
				hung *silent.Server
			)
			switch tc.server {
			case "silent":
				hung = silent.Listen(t)
				addr = hung.URL()
			case "stalled body":
				stop := make(chan struct{})
				addr = newServer(t, stalledBody(stop)).URL
				t.Cleanup(func() { close(stop) }) // runs before the server's Close
			}
			var opts []Option
			if tc.dialHangs {
				opts = append(opts, WithDialContext(func(ctx context.Context, _, _ string) (net.Conn, error) {
					<-ctx.Done()
					return nil, ctx.Err()
				}))
			}
			cfg := fastConfig(addr)
			cfg.AttemptTimeout = 100 * time.Millisecond
			c := mustNew(t, cfg, opts...)

			ctx, cancel := context.WithCancel(context.Background()) // no deadline: only the attempt timeout may end it
			t.Cleanup(cancel)
			done := make(chan error, 1)
			go func() { done <- tc.call(ctx, c) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(15 * time.Second):
				t.Fatal("the call still hangs after 15s")
			}
			if err == nil || !isTimeout(err) {
				t.Fatalf("error %v: want a timeout (net.Error with Timeout() or context.DeadlineExceeded)", err)
			}
			var re *RetryError
			if got := errors.As(err, &re); got != (tc.wantAttempts != 0) {
				t.Fatalf("errors.As(%v, *RetryError) = %v, want %v", err, got, tc.wantAttempts != 0)
			}
			if re != nil && re.Attempts != tc.wantAttempts {
				t.Errorf("%d attempts, want %d", re.Attempts, tc.wantAttempts)
			}
			if hung != nil && !tc.dialHangs {
				// The accept loop may lag behind the client: wait for it, boundedly.
				for deadline := time.Now().Add(5 * time.Second); hung.Accepted() < tc.wantAttempts && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
				if got := hung.Accepted(); got != tc.wantAttempts {
					t.Errorf("the server accepted %d connections, want %d", got, tc.wantAttempts)
				}
			}
		})
	}
}

// TestNoAttemptTimeoutByDefault checks that AttemptTimeout 0 sets no
// timeout, as Terraform sets none.
func TestNoAttemptTimeoutByDefault(t *testing.T) {
	t.Parallel()
	c := mustNew(t, DefaultConfig("http://h/s"))
	if got := c.rc.HTTPClient.Timeout; got != 0 {
		t.Errorf("HTTP client timeout %v, want none", got)
	}
}
