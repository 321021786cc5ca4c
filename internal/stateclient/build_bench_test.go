package stateclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkProbe measures what a periodic probe of the manager costs the
// client: a client built for the probe, one read of a state the server
// does not hold, and its connections closed.
func BenchmarkProbe(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) }))
	defer srv.Close()
	cfg := DefaultConfig(srv.URL + "/state/team-a-web")
	cfg.Username, cfg.Password = "user", "a-password-of-some-length"
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.FetchSummary(ctx, nil); err != nil {
			b.Fatal(err)
		}
		c.CloseIdleConnections()
	}
}
