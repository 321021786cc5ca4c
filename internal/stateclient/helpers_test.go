package stateclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/infrastate/backend-operator/internal/devpki"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// request is what the test server saw of one request.
type request struct {
	Method      string
	Path        string
	Query       string
	Auth        string // Authorization header
	ContentType string
	ContentMD5  string
	Body        string
	At          time.Time
}

// server is an httptest server that records requests before handing them
// to its handler.
type server struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []request
	handler http.HandlerFunc
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, request{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type"),
		ContentMD5: r.Header.Get("Content-MD5"), Body: string(body), At: time.Now(),
	})
	s.mu.Unlock()
	if s.handler != nil {
		s.handler(w, r)
	}
}

func (s *server) requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.reqs...)
}

// newServer starts a plain HTTP test server.
func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{handler: h}
	s.Server = httptest.NewServer(s)
	t.Cleanup(s.Close)
	return s
}

// newTLSServer starts an HTTPS test server with cfg (certificates, client
// auth) and counts accepted connections.
func newTLSServer(t *testing.T, cfg *tls.Config, h http.HandlerFunc) (*server, *countingConns) {
	t.Helper()
	s := &server{handler: h}
	s.Server = httptest.NewUnstartedServer(s)
	conns := &countingConns{}
	s.Config.ConnState = conns.track
	s.Config.ErrorLog = discardLogger()
	s.TLS = cfg
	s.StartTLS()
	t.Cleanup(s.Close)
	return s, conns
}

type countingConns struct {
	mu sync.Mutex
	n  int
}

func (c *countingConns) track(_ net.Conn, st http.ConnState) {
	if st == http.StateNew {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
}

func (c *countingConns) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// respond answers with a status, a body and header pairs.
func respond(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// sequence serves the handlers in turn, repeating the last one.
func sequence(hs ...http.HandlerFunc) http.HandlerFunc {
	var mu sync.Mutex
	n := 0
	return func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h := hs[min(n, len(hs)-1)]
		n++
		mu.Unlock()
		h(w, r)
	}
}

// hangUp closes the connection without an answer: a transport error.
func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// fastConfig is a Config for addr with millisecond retries.
func fastConfig(addr string) Config {
	return Config{
		Address:       addr + "/state",
		LockAddress:   addr + "/state/lock",
		UnlockAddress: addr + "/state/lock",
		RetryMax:      2,
		RetryWaitMin:  time.Millisecond,
		RetryWaitMax:  5 * time.Millisecond,
	}
}

// mustNew creates a client or fails the test.
func mustNew(t *testing.T, cfg Config, opts ...Option) *Client {
	t.Helper()
	c, err := New(cfg, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, from devpki, plus the server pair and a pool trusting the CA.
type testPKI struct {
	*devpki.PKI
	serverPair tls.Certificate
	pool       *x509.CertPool
}

// newPKI issues a fresh CA whose client certificate is named client.
func newPKI(t *testing.T, client string) *testPKI {
	t.Helper()
	pki, err := devpki.New(client, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(pki.ServerCert, pki.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pki.CACert) {
		t.Fatal("the test CA does not parse")
	}
	return &testPKI{PKI: pki, serverPair: pair, pool: pool}
}

// discardLogger silences a test server's TLS handshake errors.
func discardLogger() *log.Logger { return log.New(io.Discard, "", 0) }

// fetchAll reads the whole state through StreamState, for tests that look
// at the body or only at the request: nil and no error when there is no
// state. The client itself has no such call, so that no caller holds a
// whole state.
func fetchAll(ctx context.Context, c *Client) ([]byte, error) {
	return testtools.ReadStream(func(read func(io.Reader) error) (bool, int64, error) {
		return c.StreamState(ctx, read)
	})
}
