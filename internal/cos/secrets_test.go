package cos_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/cos/costest"
)

// The credentials of TestErrorsCarryNoSecrets: temporary ones, so that
// every request carries the token, with characters URLs escape.
const (
	leakID    = "AKIDleaktest"
	leakKey   = "k3y/with+special=chars-0123456789"
	leakToken = "t0ken/with+special=chars-9876543210"
)

func leakConfig() cos.Config {
	return cos.Config{
		Bucket: bucket, Region: region, Prefix: "env",
		SecretID: leakID, SecretKey: leakKey, SecurityToken: leakToken,
	}
}

// leakHarness collects the request signatures the test servers saw.
type leakHarness struct {
	mu      sync.Mutex
	sigs    []string
	servers []*costest.Server
}

var signatureValue = regexp.MustCompile(`q-signature=([0-9a-f]+)`)

// record notes the q-signature of r and returns it.
func (h *leakHarness) record(r *http.Request) string {
	m := signatureValue.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sigs = append(h.sigs, m[1])
	return m[1]
}

// forbidden returns what no error may contain: the secret key, the token
// (plain and URL-escaped) and every signature the servers saw.
func (h *leakHarness) forbidden() []string {
	out := []string{leakKey, leakToken, "q-signature"}
	for _, s := range []string{leakKey, leakToken} {
		out = append(out, url.QueryEscape(s), url.PathEscape(s))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out = append(out, h.sigs...)
	for _, srv := range h.servers {
		for _, r := range srv.RequestLog() {
			if r.Signature != "" {
				out = append(out, r.Signature)
			}
		}
	}
	return out
}

// hostile starts a loopback server that records each request's signature
// and answers with serve, which gets the signature and the token to echo.
func (h *leakHarness) hostile(t *testing.T, serve func(w http.ResponseWriter, r *http.Request, sig, token string)) *url.URL {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, h.record(r), r.Header.Get("x-cos-security-token"))
	}))
	t.Cleanup(s.Close)
	u, _ := url.Parse(s.URL)
	return u
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// leakScenario builds a client whose requests fail in one way.
type leakScenario func(t *testing.T, h *leakHarness) *cos.Client

// onCostest is a scenario on the COS test server, which holds a state and
// a lock in the default workspace before setup changes things.
func onCostest(setup func(srv *costest.Server, cfg *cos.Config)) leakScenario {
	return func(t *testing.T, h *leakHarness) *cos.Client {
		t.Helper()
		srv := costest.NewServer(t)
		srv.AddTemporaryCredentials(leakID, leakKey, leakToken)
		srv.PutState(bucket, "env/terraform.tfstate", []byte(state))
		srv.PutState(bucket, "env/terraform.tfstate.tflock", []byte(lockJSON))
		h.servers = append(h.servers, srv)
		cfg := leakConfig()
		base := srv.URL(cfg.Bucket) // before a setup closes the server
		setup(srv, &cfg)
		if cfg.Bucket != bucket {
			base = srv.URL(cfg.Bucket)
		}
		c, err := cos.New(cfg, cos.WithBaseURL(base))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// onHostile is a scenario on a loopback server answering with serve.
func onHostile(serve func(w http.ResponseWriter, r *http.Request, sig, token string), opts ...cos.Option) leakScenario {
	return func(t *testing.T, h *leakHarness) *cos.Client {
		t.Helper()
		c, err := cos.New(leakConfig(), append([]cos.Option{cos.WithBaseURL(h.hostile(t, serve))}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// echoingError answers 403 with a COS error document repeating the
// Authorization header, the signature and the token in every field.
func echoingError(w http.ResponseWriter, r *http.Request, sig, token string) {
	echoingErrorWith(http.StatusForbidden, w, r, sig, token)
}

// refusingLockWrites answers reads with 404 NoSuchKey, so that
// AcquireLock goes on to write, and writes with an echoing error of status.
func refusingLockWrites(status int) func(http.ResponseWriter, *http.Request, string, string) {
	return func(w http.ResponseWriter, r *http.Request, sig, token string) {
		if r.Method != http.MethodPut {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, "<Error><Code>NoSuchKey</Code><Message>"+xmlEscape(sig+" "+token)+"</Message></Error>")
			return
		}
		echoingErrorWith(status, w, r, sig, token)
	}
}

// echoingErrorWith answers status with a COS error document repeating the
// Authorization header, the signature and the token in every field.
func echoingErrorWith(status int, w http.ResponseWriter, r *http.Request, sig, token string) {
	echo := "Authorization " + r.Header.Get("Authorization") + " signature " + sig + " token " + token +
		" url ?q-signature=" + sig + "&x-cos-security-token=" + url.QueryEscape(token)
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("x-cos-request-id", "id-"+token)
	w.WriteHeader(status)
	_, _ = io.WriteString(w, "<Error><Code>AccessDenied "+xmlEscape(token)+"</Code><Message>"+xmlEscape(echo)+
		"</Message><Resource>"+xmlEscape(echo)+"</Resource><RequestId>"+xmlEscape(sig+" "+token)+"</RequestId></Error>")
}

// echoingObjects answers a listing with XML whose syntax error quotes the
// signature, and objects with the token as their checksum.
func echoingObjects(w http.ResponseWriter, r *http.Request, sig, token string) {
	if r.URL.Path == "/" {
		_, _ = io.WriteString(w, "<ListBucketResult><x"+sig+"></y></ListBucketResult>")
		return
	}
	w.Header().Set("X-Cos-Meta-Md5", token)
	_, _ = io.WriteString(w, state)
}

// redirectingWith answers 302 to location, repeated in the body.
func redirectingWith(location func(sig, token string) string) func(http.ResponseWriter, *http.Request, string, string) {
	return func(w http.ResponseWriter, _ *http.Request, sig, token string) {
		loc := location(sig, token)
		w.Header().Set("Location", loc)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusFound)
		_, _ = io.WriteString(w, "<Error><Code>"+xmlEscape(loc)+"</Code><Message>"+xmlEscape(loc)+"</Message></Error>")
	}
}

// signedQuery is a query string carrying the signature and the token.
func signedQuery(sig, token string) string {
	return "?q-sign-algorithm=sha1&q-ak=" + leakID + "&q-signature=" + sig + "&x-cos-security-token=" + url.QueryEscape(token)
}

// cutShort announces a body longer than it sends, then drops the
// connection.
func cutShort(w http.ResponseWriter, _ *http.Request, _, _ string) {
	w.Header().Set("X-Cos-Meta-Md5", md5hex([]byte(state)))
	w.Header().Set("Content-Length", strconv.Itoa(len(state)))
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, state[:10])
	w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

// leakCalls are the reads a probe or a RemoteState makes, and the lock
// write a StateLock makes.
var leakCalls = map[string]func(context.Context, *cos.Client) error{
	"CheckBucket": func(ctx context.Context, c *cos.Client) error { return c.CheckBucket(ctx) },
	"StreamState": func(ctx context.Context, c *cos.Client) error {
		_, _, err := c.StreamState(ctx, cos.DefaultWorkspace, func(r io.Reader) error {
			_, err := io.Copy(io.Discard, r)
			return err
		})
		return err
	},
	"ReadLock": func(ctx context.Context, c *cos.Client) error {
		_, err := c.ReadLock(ctx, cos.DefaultWorkspace)
		return err
	},
	"AcquireLock": func(ctx context.Context, c *cos.Client) error {
		_, err := c.AcquireLock(ctx, cos.DefaultWorkspace, cos.LockInfo{ID: "6f1c3a2e-8d4b-4c5a-9e7f-0a1b2c3d4e5f", Who: "backend-operator"})
		return err
	},
}

// TestErrorsCarryNoSecrets drives every failure path it can reach, on the
// COS test server and on loopback servers that echo the credentials back
// in every place an answer can carry text, and checks that no error text
// holds the secret key, the token or a request signature.
func TestErrorsCarryNoSecrets(t *testing.T) {
	other := newCountingServer(t)
	scenarios := map[string]leakScenario{
		"bucket missing": onCostest(func(_ *costest.Server, cfg *cos.Config) { cfg.Bucket = "missing-1250000000" }),
		"access denied":  onCostest(func(srv *costest.Server, _ *cos.Config) { srv.DenyAccess(bucket, true) }),
		"wrong secret key": onCostest(func(srv *costest.Server, _ *cos.Config) {
			srv.AddTemporaryCredentials(leakID, "the-servers-own-key", leakToken)
		}),
		"expired signature": onCostest(func(srv *costest.Server, _ *cos.Config) {
			srv.SetClock(func() time.Time { return time.Now().Add(3 * time.Hour) })
		}),
		"service unavailable": onCostest(func(srv *costest.Server, _ *cos.Config) { srv.FailNext(1000, http.StatusServiceUnavailable) }),
		"unreachable":         onCostest(func(srv *costest.Server, _ *cos.Config) { srv.Close() }),
		"checksum missing": onCostest(func(srv *costest.Server, _ *cos.Config) {
			srv.PutObject(bucket, "env/terraform.tfstate", []byte(state), nil)
			srv.PutObject(bucket, "env/terraform.tfstate.tflock", []byte(lockJSON), nil)
		}),
		"checksum mismatch": onCostest(func(srv *costest.Server, _ *cos.Config) {
			srv.PutObject(bucket, "env/terraform.tfstate", []byte(state), map[string]string{"md5": md5hex([]byte(leakToken))})
			srv.PutObject(bucket, "env/terraform.tfstate.tflock", []byte(lockJSON), map[string]string{"md5": md5hex([]byte(leakToken))})
		}),
		"oversize": onCostest(func(_ *costest.Server, cfg *cos.Config) { cfg.MaxStateBytes = 8 }),
		"invalid lock": onCostest(func(srv *costest.Server, _ *cos.Config) {
			srv.PutState(bucket, "env/terraform.tfstate.tflock", []byte(`{"ID": `+leakToken))
		}),
		"error answer echoing the credentials": onHostile(echoingError),
		"answers echoing the credentials":      onHostile(echoingObjects),
		"body cut short":                       onHostile(cutShort),
		"lock write refused, echoing":          onHostile(refusingLockWrites(http.StatusForbidden)),
		"lock write conflicting, echoing":      onHostile(refusingLockWrites(http.StatusConflict)),
		"lock write failing, echoing":          onHostile(refusingLockWrites(http.StatusServiceUnavailable)),
		"redirect to another host":             onHostile(redirectingWith(func(sig, token string) string { return other.URL + "/" + signedQuery(sig, token) })),
		"redirect to another host, follow-all": onHostile(redirectingWith(func(sig, token string) string { return other.URL + "/" + signedQuery(sig, token) }), cos.WithHTTPClient(&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }})),
		"same-host redirect refused by the caller's policy": onHostile(
			redirectingWith(func(sig, token string) string { return "/moved" + signedQuery(sig, token) }),
			cos.WithHTTPClient(&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return errors.New("redirects are off") }}),
		),
	}
	for name, scenario := range scenarios {
		t.Run(name, func(t *testing.T) {
			h := &leakHarness{}
			before := other.requests.Load()
			c := scenario(t, h)
			failed := 0
			for readName, read := range leakCalls {
				err := read(context.Background(), c)
				if err == nil {
					continue
				}
				failed++
				t.Logf("%s() = %v", readName, err)
				for _, secret := range h.forbidden() {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("%s() = %q, which contains %q", readName, err, secret)
					}
				}
			}
			if failed == 0 {
				t.Error("no call failed: the scenario reaches no failure path")
			}
			if n := other.requests.Load() - before; n != 0 {
				t.Errorf("the other host got %d requests, want none", n)
			}
		})
	}
}
