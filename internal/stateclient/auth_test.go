package stateclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
)

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// TestBasicAuth checks the Authorization header on every operation.
func TestBasicAuth(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		username, password string
		userinfo           string // put into every address
		want               string // Authorization header
	}{
		"no username":              {want: ""},
		"password alone is unused": {password: "pw", want: ""},
		"username and password":    {username: "alice", password: "s3cret", want: basic("alice", "s3cret")},
		"username only":            {username: "alice", want: basic("alice", "")},
		"userinfo in address":      {userinfo: "carol:from-url@", want: basic("carol", "from-url")},
		"username beats userinfo":  {username: "alice", password: "s3cret", userinfo: "carol:from-url@", want: basic("alice", "s3cret")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, respond(http.StatusOK, smallState))
			addr := strings.Replace(srv.URL, "http://", "http://"+tc.userinfo, 1)
			cfg := fastConfig(addr)
			cfg.Username, cfg.Password = tc.username, tc.password
			c := mustNew(t, cfg)
			ctx := ctxT(t)
			id, err := c.Lock(ctx, NewLockInfo("OperationTypeApply", "me"))
			if err != nil {
				t.Fatal(err)
			}
			for _, call := range []func() error{
				func() error { _, err := fetchAll(ctx, c); return err },
				func() error { _, err := c.FetchSummary(ctx, nil); return err },
				func() error { return c.Update(ctx, []byte("{}")) },
				func() error { return c.Unlock(ctx, id) },
				func() error { return c.ForceUnlock(ctx, id) },
				func() error { return c.Purge(ctx) },
			} {
				if err := call(); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range srv.requests() {
				if r.Auth != tc.want {
					t.Errorf("%s %s: Authorization %q, want %q", r.Method, r.Path, r.Auth, tc.want)
				}
			}
		})
	}
}

const (
	secretPassword = "Pa55-w0rd-XYZ"
	secretURLUser  = "urluser"
	secretURLPass  = "urlsecret"
)

// pemBody returns the base64 content of the first PEM block.
func pemBody(p []byte) []byte {
	block, _ := pem.Decode(p)
	if block == nil {
		return p
	}
	return []byte(base64.StdEncoding.EncodeToString(block.Bytes)[:40])
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) write(prefix, args string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintln(&b.buf, prefix, args)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestNoSecretsInErrorsOrLogs drives every failure path with credentials
// configured and checks that no error string and no log line (at the
// highest verbosity) holds a password, URL userinfo or PEM content.
func TestNoSecretsInErrorsOrLogs(t *testing.T) {
	t.Parallel()
	ca := newPKI(t, "client")
	serverPair := ca.serverPair
	certPEM, keyPEM := ca.ClientCert, ca.ClientKey
	otherKeyPEM := newPKI(t, "other").ClientKey
	secrets := []string{secretPassword, secretURLUser, secretURLPass, "Authorization", "Basic ", string(pemBody(keyPEM)), string(pemBody(otherKeyPEM)), "PRIVATE KEY-----"}

	var logs syncBuffer
	logger := funcr.New(logs.write, funcr.Options{Verbosity: 10})
	var errs []error
	record := func(err error) {
		if err == nil {
			t.Error("expected an error")
			return
		}
		errs = append(errs, err)
	}

	// Configuration errors.
	for _, cfg := range []Config{
		{Address: "https://" + secretURLUser + ":" + secretURLPass + "@h/%zz", Password: secretPassword},
		{Address: "https://h/s", ClientCertificatePEM: certPEM, ClientPrivateKeyPEM: otherKeyPEM},
		{Address: "https://h/s", ClientCertificatePEM: keyPEM, ClientPrivateKeyPEM: certPEM},
		{Address: "https://h/s", ClientCertificatePEM: certPEM, ClientPrivateKeyPEM: certPEM},
		{Address: "https://h/s", ClientCACertificatePEM: keyPEM},
		{Address: "https://h/s", ClientPrivateKeyPEM: keyPEM},
	} {
		_, err := New(cfg, WithLogger(logger))
		record(err)
	}

	// Request errors, over HTTP and HTTPS.
	statuses := map[string]int{"/401": 401, "/403": 403, "/500": 500, "/418": 418, "/409": 409, "/423": 423}
	handler := func(w http.ResponseWriter, r *http.Request) {
		for prefix, code := range statuses {
			if strings.HasPrefix(r.URL.Path, prefix) {
				w.WriteHeader(code)
				return
			}
		}
		hangUp(w, r)
	}
	plain := newServer(t, handler)
	secure, _ := newTLSServer(t, &tls.Config{Certificates: []tls.Certificate{serverPair}, MinVersion: tls.VersionTLS12}, handler)
	ctx := ctxT(t)
	for _, base := range []string{plain.URL, secure.URL, "http://127.0.0.1:1"} {
		for _, path := range []string{"/401", "/403", "/500", "/418", "/409", "/423", "/hangup"} {
			addr := strings.Replace(base, "://", "://"+secretURLUser+":"+secretURLPass+"@", 1) + path
			for _, username := range []string{"", "alice"} {
				cfg := fastConfig(addr)
				cfg.Address, cfg.LockAddress, cfg.UnlockAddress = addr, addr, addr
				cfg.Username, cfg.Password = username, secretPassword
				cfg.ClientCertificatePEM, cfg.ClientPrivateKeyPEM = certPEM, keyPEM
				c := mustNew(t, cfg, WithLogger(logger))
				_, err := fetchAll(ctx, c)
				record(err)
				_, err = c.FetchSummary(ctx, nil)
				record(err)
				record(c.Update(ctx, []byte(secretPassword)))
				record(c.Purge(ctx))
				_, err = c.Lock(ctx, NewLockInfo("OperationTypeApply", "me"))
				record(err)
				record(c.ForceUnlock(ctx, "x"))
			}
		}
	}
	// A cancelled context.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := fetchAll(cancelled, mustNew(t, fastConfig(strings.Replace(plain.URL, "://", "://"+secretURLUser+":"+secretURLPass+"@", 1)), WithLogger(logger)))
	record(err)

	for _, err := range errs {
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("error contains secret %q: %v", s, err)
			}
		}
	}
	out := logs.String()
	if !strings.Contains(out, "Retrying request") {
		t.Errorf("the logger saw no retry; logs:\n%s", out)
	}
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("logs contain secret %q", s)
		}
	}
}
