package cos_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/cos/costest"
)

const (
	bucket    = "states-1250000000"
	region    = "ap-guangzhou"
	secretID  = "AKIDexampleID"
	secretKey = "Th1s-is-the-secret-key"
	token     = "Th1s-is-the-session-token"
)

// newServer starts a COS test server that knows secretID/secretKey and
// has the bucket.
func newServer(t *testing.T) *costest.Server {
	t.Helper()
	srv := costest.NewServer(t)
	srv.AddCredentials(secretID, secretKey)
	srv.CreateBucket(bucket)
	return srv
}

func baseConfig() cos.Config {
	return cos.Config{Bucket: bucket, Region: region, Prefix: "env", SecretID: secretID, SecretKey: secretKey}
}

// newClient returns a client for cfg pointed at srv the way the envtest
// suites do it: through WithBaseURL.
func newClient(t *testing.T, srv *costest.Server, cfg cos.Config) *cos.Client {
	t.Helper()
	c, err := cos.New(cfg, cos.WithBaseURL(srv.URL(cfg.Bucket)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// assertNoSecrets fails when err's message carries a credential or a
// signature.
func assertNoSecrets(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []string{secretKey, token, "q-signature", "Authorization"} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error %q contains %q", err, s)
		}
	}
}

// sentinels are the errors a test can expect; cmpSentinels reports which
// of them err matches.
var sentinels = []error{
	cos.ErrInvalidConfig, cos.ErrBucketNotFound, cos.ErrAccessDenied, cos.ErrUnreachable,
	cos.ErrChecksumMissing, cos.ErrChecksumMismatch, cos.ErrStateTooLarge, cos.ErrInvalidLock,
	cos.ErrRedirect, cos.ErrLockNotHeld, cos.ErrStoreFull,
}

func matching(err error) []error {
	var out []error
	for _, s := range sentinels {
		if errors.Is(err, s) {
			out = append(out, s)
		}
	}
	return out
}

func errorsDiff(want []error, err error) string {
	return cmp.Diff(want, matching(err), cmpopts.EquateErrors())
}

func TestCheckBucket(t *testing.T) {
	cases := map[string]struct {
		setup    func(srv *costest.Server, cfg *cos.Config)
		want     []error
		wantCode string // COS error code of the *ResponseError, if any
	}{
		"ok": {},
		"missing bucket": {
			setup:    func(_ *costest.Server, cfg *cos.Config) { cfg.Bucket = "missing-1250000000" },
			want:     []error{cos.ErrBucketNotFound},
			wantCode: "NoSuchBucket",
		},
		"unknown key id": {
			setup:    func(_ *costest.Server, cfg *cos.Config) { cfg.SecretID = "AKIDunknown" },
			want:     []error{cos.ErrAccessDenied},
			wantCode: "InvalidAccessKeyId",
		},
		"wrong secret": {
			setup:    func(_ *costest.Server, cfg *cos.Config) { cfg.SecretKey = "not-the-servers-secret" },
			want:     []error{cos.ErrAccessDenied},
			wantCode: "SignatureDoesNotMatch",
		},
		"access denied": {
			setup:    func(srv *costest.Server, _ *cos.Config) { srv.DenyAccess(bucket, true) },
			want:     []error{cos.ErrAccessDenied},
			wantCode: "AccessDenied",
		},
		"anonymous": {
			setup:    func(_ *costest.Server, cfg *cos.Config) { cfg.SecretID, cfg.SecretKey = "", "" },
			want:     []error{cos.ErrAccessDenied},
			wantCode: "AccessDenied",
		},
		"expired signature": {
			setup: func(srv *costest.Server, _ *cos.Config) {
				srv.SetClock(func() time.Time { return time.Now().Add(3 * time.Hour) })
			},
			want:     []error{cos.ErrAccessDenied},
			wantCode: "AccessDenied",
		},
		"one 503, retried by the SDK": {
			setup: func(srv *costest.Server, _ *cos.Config) { srv.FailNext(1, http.StatusServiceUnavailable) },
		},
		"service unavailable": {
			setup:    func(srv *costest.Server, _ *cos.Config) { srv.FailNext(3, http.StatusServiceUnavailable) },
			wantCode: "ServiceUnavailable",
		},
		"unreachable": {
			setup: func(srv *costest.Server, _ *cos.Config) { srv.Close() },
			want:  []error{cos.ErrUnreachable},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			cfg := baseConfig()
			base := srv.URL(cfg.Bucket) // before a setup closes the server
			if tc.setup != nil {
				tc.setup(srv, &cfg)
				base = srv.URL(cfg.Bucket)
			}
			c, err := cos.New(cfg, cos.WithBaseURL(base))
			if err != nil {
				t.Fatal(err)
			}
			err = c.CheckBucket(context.Background())
			t.Logf("CheckBucket() = %v", err)
			if diff := errorsDiff(tc.want, err); diff != "" {
				t.Errorf("CheckBucket() = %v; sentinels (-want +got):\n%s", err, diff)
			}
			var re *cos.ResponseError
			if errors.As(err, &re) != (tc.wantCode != "") || (re != nil && re.Code != tc.wantCode) {
				t.Errorf("CheckBucket() = %#v, want a *ResponseError with code %q", err, tc.wantCode)
			}
			if tc.wantCode == "" && len(tc.want) == 0 && err != nil {
				t.Errorf("CheckBucket() = %v, want nil", err)
			}
			assertNoSecrets(t, err)
		})
	}
}

func TestCheckBucketListsThePrefix(t *testing.T) {
	srv := newServer(t)
	if err := newClient(t, srv, baseConfig()).CheckBucket(context.Background()); err != nil {
		t.Fatal(err)
	}
	log := srv.RequestLog()
	got := []string{log[0].Method, log[0].Path, log[0].Query, log[0].SecretID}
	if diff := cmp.Diff([]string{"GET", "/", "max-keys=1&prefix=env", secretID}, got); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

func TestSecurityTokenPassedThrough(t *testing.T) {
	cases := map[string]struct {
		token string
		want  []error
	}{
		"token":    {token: token},
		"no token": {want: []error{cos.ErrAccessDenied}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			srv.AddTemporaryCredentials("AKIDtemporary", secretKey, token)
			cfg := baseConfig()
			cfg.SecretID, cfg.SecurityToken = "AKIDtemporary", tc.token
			err := newClient(t, srv, cfg).CheckBucket(context.Background())
			if diff := errorsDiff(tc.want, err); diff != "" {
				t.Errorf("CheckBucket() = %v; sentinels (-want +got):\n%s", err, diff)
			}
			if got := srv.RequestLog()[0].SecurityToken; got != tc.token {
				t.Errorf("x-cos-security-token = %q, want %q", got, tc.token)
			}
			assertNoSecrets(t, err)
		})
	}
}

// TestBucketURLReachesTheServer builds the client without WithBaseURL, as
// production does, and routes its connections to the server.
func TestBucketURLReachesTheServer(t *testing.T) {
	srv := newServer(t)
	cfg := baseConfig()
	cfg.Endpoint = "http://cos-internal.ap-shanghai.tencentcos.cn"
	cfg.AllowHTTPEndpoint = true // the test server speaks plain http
	c, err := cos.New(cfg, cos.WithHTTPClient(srv.HTTPClient()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckBucket(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := srv.RequestLog()[0].Host, bucket+".cos-internal.ap-shanghai.tencentcos.cn"; got != want {
		t.Errorf("Host = %q, want %q", got, want)
	}
}

func TestWithHTTPClientLeavesTheCallersClient(t *testing.T) {
	srv := newServer(t)
	hc := srv.HTTPClient()
	transport := hc.Transport
	cfg := baseConfig()
	cfg.Endpoint = "http://cos-internal.ap-guangzhou.tencentcos.cn"
	cfg.AllowHTTPEndpoint = true // the test server speaks plain http
	c, err := cos.New(cfg, cos.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckBucket(context.Background()); err != nil {
		t.Fatal(err)
	}
	if hc.Transport != transport || hc.CheckRedirect != nil {
		t.Error("New modified the caller's http.Client")
	}
}

// hangingServer accepts requests and answers none until the test ends.
func hangingServer(t *testing.T) *url.URL {
	t.Helper()
	done := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done); s.Close() })
	u, _ := url.Parse(s.URL)
	return u
}

func TestTimeoutsAndCancellation(t *testing.T) {
	cfg := baseConfig()
	t.Run("context deadline", func(t *testing.T) {
		c, _ := cos.New(cfg, cos.WithBaseURL(hangingServer(t)))
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := c.CheckBucket(ctx)
		if !errors.Is(err, cos.ErrUnreachable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("CheckBucket() = %v, want ErrUnreachable and DeadlineExceeded", err)
		}
	})
	t.Run("client timeout", func(t *testing.T) {
		c, _ := cos.New(cfg, cos.WithBaseURL(hangingServer(t)), cos.WithHTTPClient(&http.Client{Timeout: 50 * time.Millisecond}))
		if err := c.CheckBucket(context.Background()); !errors.Is(err, cos.ErrUnreachable) {
			t.Errorf("CheckBucket() = %v, want ErrUnreachable", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		c, _ := cos.New(cfg, cos.WithBaseURL(hangingServer(t)))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := c.CheckBucket(ctx)
		if !errors.Is(err, context.Canceled) || errors.Is(err, cos.ErrUnreachable) {
			t.Errorf("CheckBucket() = %v, want Canceled and not ErrUnreachable", err)
		}
	})
}
