package stateclient

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/infrastate/backend-operator/internal/stateserver"
)

// TestCloseIdleConnections checks, on the reference server over real TCP,
// that a probe's requests share one connection, and that
// CloseIdleConnections closes it: nothing stays open between probes.
func TestCloseIdleConnections(t *testing.T) {
	t.Parallel()
	var (
		mu     sync.Mutex
		opened int
		open   = map[net.Conn]bool{}
	)
	ts := httptest.NewUnstartedServer(stateserver.New(stateserver.NewMemoryStore()))
	ts.Config.ConnState = func(conn net.Conn, state http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch state {
		case http.StateNew:
			opened++
			open[conn] = true
		case http.StateClosed, http.StateHijacked:
			delete(open, conn)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)

	c, err := New(referenceConfig(ts.URL, "idle", false))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.FetchSummary(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	if opened != 1 || len(open) != 1 {
		t.Errorf("after 3 requests: %d connections opened, %d open; want 1 and 1", opened, len(open))
	}
	mu.Unlock()

	c.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(open)
		mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open 10s after CloseIdleConnections", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
