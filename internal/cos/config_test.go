package cos_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/cos"
)

func TestBucketURL(t *testing.T) {
	cases := map[string]struct {
		cfg     cos.Config
		want    string
		wantErr error
	}{
		"region": {
			cfg:  cos.Config{Bucket: "states-1250000000", Region: "ap-guangzhou"},
			want: "https://states-1250000000.cos.ap-guangzhou.myqcloud.com",
		},
		"accelerate": {
			cfg:  cos.Config{Bucket: "states-1250000000", Region: "ap-guangzhou", Accelerate: true},
			want: "https://states-1250000000.cos.accelerate.myqcloud.com",
		},
		"https endpoint": {
			cfg:  cos.Config{Bucket: "states-1250000000", Region: "ap-guangzhou", Endpoint: "https://cos-internal.ap-guangzhou.tencentcos.cn"},
			want: "https://states-1250000000.cos-internal.ap-guangzhou.tencentcos.cn",
		},
		"http endpoint": {
			cfg:  cos.Config{Bucket: "states-1250000000", Region: "ap-guangzhou", Endpoint: "http://cos-internal.ap-guangzhou.tencentcos.cn"},
			want: "http://states-1250000000.cos-internal.ap-guangzhou.tencentcos.cn",
		},
		"endpoint wins over accelerate": {
			cfg:  cos.Config{Bucket: "states-1250000000", Region: "ap-guangzhou", Accelerate: true, Endpoint: "https://cos-internal.ap-guangzhou.tencentcos.cn"},
			want: "https://states-1250000000.cos-internal.ap-guangzhou.tencentcos.cn",
		},
		"endpoint region wins over region": {
			cfg:  cos.Config{Bucket: "states-1250000000", Region: "ap-guangzhou", Endpoint: "http://cos-internal.ap-shanghai.tencentcos.cn"},
			want: "http://states-1250000000.cos-internal.ap-shanghai.tencentcos.cn",
		},
		"endpoint with trailing slash": {
			cfg:     cos.Config{Bucket: "states-1250000000", Region: "ap-guangzhou", Endpoint: "https://cos-internal.ap-guangzhou.tencentcos.cn/"},
			wantErr: cos.ErrInvalidConfig,
		},
		"public endpoint": {
			cfg:     cos.Config{Bucket: "states-1250000000", Region: "ap-guangzhou", Endpoint: "https://cos.ap-guangzhou.myqcloud.com"},
			wantErr: cos.ErrInvalidConfig,
		},
		"endpoint without scheme": {
			cfg:     cos.Config{Bucket: "states-1250000000", Region: "ap-guangzhou", Endpoint: "cos-internal.ap-guangzhou.tencentcos.cn"},
			wantErr: cos.ErrInvalidConfig,
		},
		"endpoint with a path in the region": {
			cfg:     cos.Config{Bucket: "states-1250000000", Region: "ap-guangzhou", Endpoint: "https://cos-internal.ap/x.tencentcos.cn"},
			wantErr: cos.ErrInvalidConfig,
		},
		"no bucket": {
			cfg:     cos.Config{Region: "ap-guangzhou"},
			wantErr: cos.ErrInvalidConfig,
		},
		"no region": {
			cfg:     cos.Config{Bucket: "states-1250000000", Accelerate: true},
			wantErr: cos.ErrInvalidConfig,
		},
		"bucket with a slash": {
			cfg:     cos.Config{Bucket: "evil.com/x", Region: "ap-guangzhou"},
			wantErr: cos.ErrInvalidConfig,
		},
		"region with a user": {
			cfg:     cos.Config{Bucket: "states-1250000000", Region: "x@evil.com#"},
			wantErr: cos.ErrInvalidConfig,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u, err := cos.BucketURL(tc.cfg)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("BucketURL error = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if got := u.String(); got != tc.want {
				t.Errorf("BucketURL = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestStateAndLockKeys(t *testing.T) {
	cases := map[string]struct {
		prefix, key, workspace string
		want                   string
	}{
		"default, no prefix":          {key: "terraform.tfstate", workspace: "default", want: "terraform.tfstate"},
		"default, default key":        {workspace: "default", want: "terraform.tfstate"},
		"default, prefix":             {prefix: "env", key: "terraform.tfstate", workspace: "default", want: "env/terraform.tfstate"},
		"named, no prefix":            {key: "terraform.tfstate", workspace: "staging", want: "staging/terraform.tfstate"},
		"named, prefix":               {prefix: "env", key: "app.tfstate", workspace: "staging", want: "env/staging/app.tfstate"},
		"prefix with trailing slash":  {prefix: "env/", key: "terraform.tfstate", workspace: "default", want: "env/terraform.tfstate"},
		"nested prefix, named":        {prefix: "team/env", key: "terraform.tfstate", workspace: "prod", want: "team/env/prod/terraform.tfstate"},
		"prefix with doubled slashes": {prefix: "a//b/", key: "terraform.tfstate", workspace: "w", want: "a/b/w/terraform.tfstate"},
		"key with a directory":        {prefix: "env", key: "dir/state", workspace: "default", want: "env/dir/state"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := cos.StateKey(tc.prefix, tc.key, tc.workspace)
			if got != tc.want {
				t.Errorf("StateKey(%q, %q, %q) = %q, want %q", tc.prefix, tc.key, tc.workspace, got, tc.want)
			}
			if lock := cos.LockKey(got); lock != tc.want+".tflock" {
				t.Errorf("LockKey(%q) = %q, want %q", got, lock, tc.want+".tflock")
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	valid := cos.Config{Bucket: "states-1250000000", Region: "ap-guangzhou", SecretID: "AKID", SecretKey: "Sup3rSecretKey"}
	cases := map[string]struct {
		edit    func(*cos.Config)
		wantErr error
	}{
		"valid":                     {edit: func(*cos.Config) {}},
		"anonymous":                 {edit: func(c *cos.Config) { c.SecretID, c.SecretKey = "", "" }},
		"bucket without appid":      {edit: func(c *cos.Config) { c.Bucket = "states" }, wantErr: cos.ErrInvalidConfig},
		"prefix starting with /":    {edit: func(c *cos.Config) { c.Prefix = "/env" }, wantErr: cos.ErrInvalidConfig},
		"prefix starting with ./":   {edit: func(c *cos.Config) { c.Prefix = "./env" }, wantErr: cos.ErrInvalidConfig},
		"key ending with /":         {edit: func(c *cos.Config) { c.Key = "state/" }, wantErr: cos.ErrInvalidConfig},
		"key starting with /":       {edit: func(c *cos.Config) { c.Key = "/state" }, wantErr: cos.ErrInvalidConfig},
		"negative size limit":       {edit: func(c *cos.Config) { c.MaxStateBytes = -1 }, wantErr: cos.ErrInvalidConfig},
		"secret key with a space":   {edit: func(c *cos.Config) { c.SecretKey = "Sup3rSecretKey " }, wantErr: cos.ErrInvalidConfig},
		"secret id with a space":    {edit: func(c *cos.Config) { c.SecretID = " AKID" }, wantErr: cos.ErrInvalidConfig},
		"no region":                 {edit: func(c *cos.Config) { c.Region = "" }, wantErr: cos.ErrInvalidConfig},
		"invalid internal endpoint": {edit: func(c *cos.Config) { c.Endpoint = "https://example.com" }, wantErr: cos.ErrInvalidConfig},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := valid
			tc.edit(&cfg)
			_, err := cos.New(cfg)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("New error = %v, want %v", err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "Sup3rSecretKey") {
				t.Errorf("error %q quotes the secret key", err)
			}
		})
	}
}

func TestNewUsesBucketURL(t *testing.T) {
	c, err := cos.New(cos.Config{Bucket: "states-1250000000", Region: "ap-guangzhou", Accelerate: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("https://states-1250000000.cos.accelerate.myqcloud.com", c.BaseURL().String()); diff != "" {
		t.Errorf("BaseURL (-want +got):\n%s", diff)
	}
}

func TestConfigStringRedactsSecrets(t *testing.T) {
	cfg := cos.Config{Bucket: "b-1", SecretID: "AKIDvisible", SecretKey: "s3cr3t-key", SecurityToken: "t0ken-value"}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(format, cfg)
		if strings.Contains(out, "s3cr3t-key") || strings.Contains(out, "t0ken-value") {
			t.Errorf("%s prints a secret: %s", format, out)
		}
		if !strings.Contains(out, "AKIDvisible") {
			t.Errorf("%s hides the secret ID: %s", format, out)
		}
	}
	if out := fmt.Sprintf("%v", &cfg); strings.Contains(out, "s3cr3t-key") {
		t.Errorf("pointer prints a secret: %s", out)
	}
}

// TestHTTPEndpoint checks that an http:// endpoint, which would carry the
// security token and the state in clear text, needs AllowHTTPEndpoint.
func TestHTTPEndpoint(t *testing.T) {
	valid := cos.Config{Bucket: "states-1250000000", Region: "ap-guangzhou", SecretID: "AKID", SecretKey: "Sup3rSecretKey", SecurityToken: "t0ken-value"}
	cases := map[string]struct {
		edit    func(*cos.Config)
		wantErr error
	}{
		"https endpoint": {edit: func(c *cos.Config) { c.Endpoint = "https://cos-internal.ap-guangzhou.tencentcos.cn" }},
		"no endpoint":    {edit: func(*cos.Config) {}},
		"http endpoint": {
			edit:    func(c *cos.Config) { c.Endpoint = "http://cos-internal.ap-guangzhou.tencentcos.cn" },
			wantErr: cos.ErrInvalidConfig,
		},
		"http endpoint, anonymous": {
			edit: func(c *cos.Config) {
				c.Endpoint = "http://cos-internal.ap-guangzhou.tencentcos.cn"
				c.SecretID, c.SecretKey, c.SecurityToken = "", "", ""
			},
			wantErr: cos.ErrInvalidConfig,
		},
		"http endpoint, allowed": {
			edit: func(c *cos.Config) {
				c.Endpoint = "http://cos-internal.ap-guangzhou.tencentcos.cn"
				c.AllowHTTPEndpoint = true
			},
		},
		"allowed, https endpoint": {
			edit: func(c *cos.Config) {
				c.Endpoint = "https://cos-internal.ap-guangzhou.tencentcos.cn"
				c.AllowHTTPEndpoint = true
			},
		},
		"allowed, no endpoint": {edit: func(c *cos.Config) { c.AllowHTTPEndpoint = true }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := valid
			tc.edit(&cfg)
			c, err := cos.New(cfg)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("New() = %v, want %v", err, tc.wantErr)
			}
			if err == nil {
				if want, _ := cos.BucketURL(cfg); c.BaseURL().String() != want.String() {
					t.Errorf("BaseURL() = %s, want %s", c.BaseURL(), want)
				}
				return
			}
			if !strings.Contains(err.Error(), "endpoint") {
				t.Errorf("New() = %q, want it to name the endpoint", err)
			}
			for _, secret := range []string{"Sup3rSecretKey", "t0ken-value"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("New() = %q quotes a secret", err)
				}
			}
		})
	}
}
