package stateclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/infrastate/backend-operator/internal/devpki"
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

// BenchmarkNewTLS measures building a client with a CA and a client
// certificate and key, as each probe of such a backend does, with the
// material parsed for the client or taken from a TLSCache.
func BenchmarkNewTLS(b *testing.B) {
	pki, err := devpki.New("client", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig("https://127.0.0.1/state/team-a-web")
	cfg.ClientCACertificatePEM, cfg.ClientCertificatePEM, cfg.ClientPrivateKeyPEM = pki.CACert, pki.ClientCert, pki.ClientKey
	for name, opts := range map[string][]Option{"parsed": nil, "TLSCache": {WithTLSCache(NewTLSCache(4))}} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := New(cfg, opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
