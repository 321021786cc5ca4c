package stateclient

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// TestRetryWaits measures the waits between attempts: min * 2^n, capped
// at max, and exactly RetryMax+1 attempts.
func TestRetryWaits(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	cases := map[string]struct {
		retryMax int
		min, max time.Duration
		want     []time.Duration // waits between attempts
	}{
		"no retry":     {retryMax: 0, min: 20 * ms, max: 100 * ms},
		"doubling":     {retryMax: 3, min: 20 * ms, max: 200 * ms, want: []time.Duration{20 * ms, 40 * ms, 80 * ms}},
		"capped":       {retryMax: 4, min: 20 * ms, max: 50 * ms, want: []time.Duration{20 * ms, 40 * ms, 50 * ms, 50 * ms}},
		"zero waits":   {retryMax: 2, want: []time.Duration{0, 0}},
		"min over max": {retryMax: 2, min: 60 * ms, max: 30 * ms, want: []time.Duration{30 * ms, 30 * ms}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, respond(http.StatusInternalServerError, ""))
			cfg := fastConfig(srv.URL)
			cfg.RetryMax, cfg.RetryWaitMin, cfg.RetryWaitMax = tc.retryMax, tc.min, tc.max
			_, err := fetchAll(ctxT(t), mustNew(t, cfg))
			var re *RetryError
			if !errors.As(err, &re) || re.Attempts != tc.retryMax+1 {
				t.Fatalf("error %v: want a *RetryError after %d attempts", err, tc.retryMax+1)
			}
			reqs := srv.requests()
			if len(reqs) != tc.retryMax+1 {
				t.Fatalf("server saw %d attempts, want %d", len(reqs), tc.retryMax+1)
			}
			for i, wait := range tc.want {
				gap := reqs[i+1].At.Sub(reqs[i].At)
				// A timer never fires early; the upper bound allows for a busy machine.
				if gap < wait || gap > wait+time.Second {
					t.Errorf("wait before attempt %d = %v, want %v (+ scheduling)", i+2, gap, wait)
				}
			}
		})
	}
}

// TestNotRetried checks the answers the default policy does not retry.
func TestNotRetried(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401, 403, 404, 409, 412, 423, 501} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, respond(status, ""))
			c := mustNew(t, fastConfig(srv.URL))
			_, _ = c.Lock(ctxT(t), NewLockInfo("OperationTypeApply", "me"))
			if n := len(srv.requests()); n != 1 {
				t.Errorf("status %d: %d attempts, want 1", status, n)
			}
		})
	}
}

// TestRetryAfter checks that a Retry-After on 429 and 503 overrides the
// configured backoff (1 ms), within RetryWaitMax (5 s here).
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		status  int
		after   string
		minWait time.Duration
	}{
		"429 seconds":       {status: 429, after: "1", minWait: time.Second},
		"503 seconds":       {status: 503, after: "1", minWait: time.Second},
		"503 zero":          {status: 503, after: "0"},
		"500 ignores it":    {status: 500, after: "1"},
		"429 unparsable":    {status: 429, after: "soon"},
		"429 date in past":  {status: 429, after: "Mon, 02 Jan 2006 15:04:05 GMT"},
		"429 in one second": {status: 429, after: "DATE", minWait: 10 * time.Millisecond}, // HTTP dates have second resolution
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			after := tc.after
			if after == "DATE" {
				after = time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat)
			}
			srv := newServer(t, sequence(respond(tc.status, "", "Retry-After", after), respond(http.StatusOK, smallState)))
			cfg := fastConfig(srv.URL)
			cfg.RetryWaitMax = 5 * time.Second // above every Retry-After here: honoured as sent
			start := time.Now()
			data, err := fetchAll(ctxT(t), mustNew(t, cfg))
			elapsed := time.Since(start)
			if err != nil || data == nil {
				t.Fatalf("StreamState() read %q, %v", data, err)
			}
			reqs := srv.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d attempts, want 2", len(reqs))
			}
			if gap := reqs[1].At.Sub(reqs[0].At); gap < tc.minWait {
				t.Errorf("waited %v, want at least %v", gap, tc.minWait)
			}
			if tc.minWait == 0 && elapsed > 900*time.Millisecond {
				t.Errorf("took %v: Retry-After must be ignored here", elapsed)
			}
		})
	}
}

// TestContextCancellation checks that calls stop promptly when their
// context ends, whether waiting between attempts or for an answer.
func TestContextCancellation(t *testing.T) {
	t.Parallel()
	slow := func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	}
	cases := map[string]struct {
		handler http.HandlerFunc
		wait    time.Duration // RetryWaitMin and Max
		call    func(context.Context, *Client) error
	}{
		"fetch during retry wait": {handler: respond(503, ""), wait: 20 * time.Second, call: func(ctx context.Context, c *Client) error { _, err := fetchAll(ctx, c); return err }},
		"lock during retry wait":  {handler: respond(500, ""), wait: 20 * time.Second, call: func(ctx context.Context, c *Client) error { _, err := c.Lock(ctx, NewLockInfo("x", "y")); return err }},
		"fetch slow answer":       {handler: slow, wait: time.Millisecond, call: func(ctx context.Context, c *Client) error { _, err := fetchAll(ctx, c); return err }},
		"summary slow answer":     {handler: slow, wait: time.Millisecond, call: func(ctx context.Context, c *Client) error { _, err := c.FetchSummary(ctx, nil); return err }},
		"update slow answer":      {handler: slow, wait: time.Millisecond, call: func(ctx context.Context, c *Client) error { return c.Update(ctx, []byte("{}")) }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tc.handler)
			cfg := fastConfig(srv.URL)
			cfg.RetryWaitMin, cfg.RetryWaitMax = tc.wait, tc.wait
			c := mustNew(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := tc.call(ctx, c)
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("returned after %v, want about 200ms", elapsed)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v is not context.DeadlineExceeded", err)
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d attempts, want 1", n)
			}
		})
	}
}

// TestSlowBody checks that a body stalling mid-stream is abandoned when
// the context ends.
func TestSlowBody(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = w.Write([]byte(`{"version":4,`))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := fetchAll(ctx, mustNew(t, fastConfig(srv.URL)))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v is not context.DeadlineExceeded", err)
	}
}

// TestRetryAfterCapped checks that Retry-After never makes the client wait
// longer than RetryWaitMax: a 429 or 503 asking for an hour, in seconds or
// as a date, is retried after RetryWaitMax.
func TestRetryAfterCapped(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		status int
		after  string
	}{
		"429 one hour":      {status: 429, after: "3600"},
		"503 one hour":      {status: 503, after: "3600"},
		"429 a day, a date": {status: 429, after: "DATE"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			after := tc.after
			if after == "DATE" {
				after = time.Now().Add(24 * time.Hour).UTC().Format(http.TimeFormat)
			}
			srv := newServer(t, sequence(respond(tc.status, "", "Retry-After", after), respond(http.StatusOK, smallState)))
			cfg := fastConfig(srv.URL)
			cfg.RetryWaitMax = 50 * time.Millisecond
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel) // ends a wait that ignored the cap
			c := mustNew(t, cfg)
			done := make(chan error, 1)
			go func() {
				_, err := fetchAll(ctx, c)
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("StreamState() = %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("StreamState() still waiting after 15s: Retry-After %s was not capped at RetryWaitMax", after)
			}
			if n := len(srv.requests()); n != 2 {
				t.Errorf("%d attempts, want 2", n)
			}
		})
	}
}
