package cos_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/cos"
)

// TestWithServiceURL builds clients as production does (the bucket URL
// from the Config, https included) and sends them to the server's
// Host-routing listener: the server must see the bucket's host name and a
// signature it accepts, and the dial function the service address only.
func TestWithServiceURL(t *testing.T) {
	cases := map[string]struct {
		cfg      func(*cos.Config)
		wantHost string
	}{
		"regional": {wantHost: bucket + ".cos.ap-guangzhou.myqcloud.com"},
		"accelerate": {
			cfg:      func(c *cos.Config) { c.Accelerate = true },
			wantHost: bucket + ".cos.accelerate.myqcloud.com",
		},
		"internal endpoint": {
			cfg:      func(c *cos.Config) { c.Endpoint = "https://cos-internal.ap-shanghai.tencentcos.cn" },
			wantHost: bucket + ".cos-internal.ap-shanghai.tencentcos.cn",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			srv.PutState(bucket, "env/terraform.tfstate", []byte(state))
			srv.PutState(bucket, "env/staging/terraform.tfstate", []byte(state))
			cfg := baseConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			var d net.Dialer
			dial := &dialRecorder{connect: d.DialContext}
			c, err := cos.New(cfg, cos.WithServiceURL(srv.ServiceURL()), cos.WithDialContext(dial.DialContext))
			if err != nil {
				t.Fatal(err)
			}
			if err := readEverything(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{srv.ServiceURL().Host}, dial.dialed()); diff != "" {
				t.Errorf("dialed (-want +got):\n%s", diff)
			}
			log := srv.RequestLog()
			if len(log) == 0 {
				t.Fatal("the server saw no request")
			}
			for _, r := range log {
				if r.Host != tc.wantHost || r.SecretID != secretID {
					t.Errorf("%s %s: Host %q, signed by %q; want Host %q signed by %q", r.Method, r.Path, r.Host, r.SecretID, tc.wantHost, secretID)
				}
			}
		})
	}
}

func TestWithServiceURLUnknownBucket(t *testing.T) {
	srv := newServer(t)
	cfg := baseConfig()
	cfg.Bucket = "missing-1250000000"
	c, err := cos.New(cfg, cos.WithServiceURL(srv.ServiceURL()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckBucket(context.Background()); !errors.Is(err, cos.ErrBucketNotFound) {
		t.Errorf("CheckBucket = %v, want ErrBucketNotFound", err)
	}
}

func TestWithServiceURLExcludesWithBaseURL(t *testing.T) {
	srv := newServer(t)
	if _, err := cos.New(baseConfig(), cos.WithServiceURL(srv.ServiceURL()), cos.WithBaseURL(srv.URL(bucket))); err == nil {
		t.Error("New accepted WithServiceURL and WithBaseURL together")
	}
}

func TestParseServiceURL(t *testing.T) {
	cases := map[string]struct {
		raw, want string
	}{
		"http":           {raw: "http://127.0.0.1:9000", want: "http://127.0.0.1:9000"},
		"https":          {raw: "https://cos.test", want: "https://cos.test"},
		"trailing slash": {raw: "http://[::1]:9000/", want: "http://[::1]:9000"},
		"no scheme":      {raw: "127.0.0.1:9000"},
		"other scheme":   {raw: "ftp://127.0.0.1"},
		"no host":        {raw: "http://"},
		"port only":      {raw: "http://:9000"},
		"path":           {raw: "http://127.0.0.1:9000/cos"},
		"query":          {raw: "http://127.0.0.1:9000?x=1"},
		"user info":      {raw: "http://u:s3cret@127.0.0.1:9000"},
		"not a URL":      {raw: "http://u:s3cret@127.0.0.1:9000/%zz"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u, err := cos.ParseServiceURL(tc.raw)
			if tc.want == "" {
				if !errors.Is(err, cos.ErrInvalidConfig) {
					t.Fatalf("ParseServiceURL(%q) = %v, %v; want ErrInvalidConfig", tc.raw, u, err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("error %q quotes the password of the URL", err)
				}
				return
			}
			if err != nil || u.String() != tc.want {
				t.Errorf("ParseServiceURL(%q) = %v, %v; want %s", tc.raw, u, err, tc.want)
			}
		})
	}
}
