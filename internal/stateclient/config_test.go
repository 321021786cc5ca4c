package stateclient

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNewValidation(t *testing.T) {
	t.Parallel()
	ca := newPKI(t, "client")
	certPEM, keyPEM := ca.ClientCert, ca.ClientKey
	otherKeyPEM := newPKI(t, "other").ClientKey
	ok := Config{Address: "https://state.example/s"}
	with := func(f func(*Config)) Config { c := ok; f(&c); return c }
	cases := map[string]struct {
		cfg     Config
		wantErr string // empty: valid
	}{
		"minimal":             {cfg: ok},
		"defaults":            {cfg: DefaultConfig("http://127.0.0.1:8080/state")},
		"all addresses":       {cfg: with(func(c *Config) { c.LockAddress, c.UnlockAddress = "http://h/l", "https://h/u" })},
		"userinfo in address": {cfg: with(func(c *Config) { c.Address = "https://u:p@h/s" })},
		"mTLS": {cfg: with(func(c *Config) {
			c.ClientCertificatePEM, c.ClientPrivateKeyPEM, c.ClientCACertificatePEM = certPEM, keyPEM, ca.CACert
		})},
		"empty address":      {cfg: Config{}, wantErr: `address must be an http or https URL, got scheme ""`},
		"ftp address":        {cfg: with(func(c *Config) { c.Address = "ftp://h/s" }), wantErr: `address must be an http or https URL, got scheme "ftp"`},
		"relative address":   {cfg: with(func(c *Config) { c.Address = "/state" }), wantErr: `got scheme ""`},
		"no host":            {cfg: with(func(c *Config) { c.Address = "http:///state" }), wantErr: `address "http:///state" has no host`},
		"unparsable address": {cfg: with(func(c *Config) { c.Address = "http://[::1/s" }), wantErr: `address "http://[::1/s" is not a valid URL: missing ']' in host`},
		"bad lock address":   {cfg: with(func(c *Config) { c.LockAddress = "unix:///sock" }), wantErr: `lock address must be an http or https URL, got scheme "unix"`},
		"bad unlock address": {cfg: with(func(c *Config) { c.UnlockAddress = "h:80" }), wantErr: `unlock address must be an http or https URL, got scheme "h"`},
		"bad method":         {cfg: with(func(c *Config) { c.UpdateMethod = "PO ST" }), wantErr: `update method "PO ST" is not a valid HTTP method`},
		"bad lock method":    {cfg: with(func(c *Config) { c.LockMethod = "LOCK\n" }), wantErr: "lock method"},
		"negative retries":   {cfg: with(func(c *Config) { c.RetryMax = -1 }), wantErr: "retry max -1 is negative"},
		"negative wait":      {cfg: with(func(c *Config) { c.RetryWaitMin = -time.Second }), wantErr: "retry waits must not be negative"},
		"negative timeout":   {cfg: with(func(c *Config) { c.AttemptTimeout = -time.Second }), wantErr: "attempt timeout -1s is negative"},
		"token in bad URL":   {cfg: with(func(c *Config) { c.Address = "http://[::1/s?token=QUERYSECRET" }), wantErr: "address is not a valid URL"},
		"negative max bytes": {cfg: with(func(c *Config) { c.MaxStateBytes = -1 }), wantErr: "max state bytes -1 is negative"},
		"two errors":         {cfg: with(func(c *Config) { c.RetryMax, c.MaxStateBytes = -1, -1 }), wantErr: "retry max -1 is negative\ninvalid state client configuration: max state bytes"},
		"CA without cert":    {cfg: with(func(c *Config) { c.ClientCACertificatePEM = []byte("not a PEM") }), wantErr: "the CA certificate PEM contains no valid certificate"},
		"CA is a key":        {cfg: with(func(c *Config) { c.ClientCACertificatePEM = keyPEM }), wantErr: "no valid certificate"},
		"cert without key":   {cfg: with(func(c *Config) { c.ClientCertificatePEM = certPEM }), wantErr: "a client certificate needs a client private key"},
		"key without cert":   {cfg: with(func(c *Config) { c.ClientPrivateKeyPEM = keyPEM }), wantErr: "a client private key needs a client certificate"},
		"mismatched pair":    {cfg: with(func(c *Config) { c.ClientCertificatePEM, c.ClientPrivateKeyPEM = certPEM, otherKeyPEM }), wantErr: "cannot load the client certificate and key: tls: private key does not match public key"},
		"swapped pair":       {cfg: with(func(c *Config) { c.ClientCertificatePEM, c.ClientPrivateKeyPEM = keyPEM, certPEM }), wantErr: "PEM inputs may have been switched"},
		"garbage key": {cfg: with(func(c *Config) {
			c.ClientCertificatePEM, c.ClientPrivateKeyPEM = certPEM, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
		}), wantErr: "cannot load the client certificate and key"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := New(tc.cfg)
			if tc.wantErr == "" {
				if err != nil || c == nil {
					t.Fatalf("New() = %v, %v", c, err)
				}
				return
			}
			checkErr(t, err, tc.wantErr, ErrInvalidConfig)
			if c != nil {
				t.Error("New returned a client with an error")
			}
			if strings.Contains(err.Error(), "QUERYSECRET") {
				t.Errorf("error quotes a query value: %v", err)
			}
			for _, secret := range [][]byte{keyPEM, otherKeyPEM, certPEM} {
				if strings.Contains(err.Error(), string(pemBody(secret))) {
					t.Errorf("error quotes PEM content: %v", err)
				}
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	t.Parallel()
	c := mustNew(t, Config{Address: "http://h/s"})
	if c.cfg.UpdateMethod != "POST" || c.cfg.LockMethod != "LOCK" || c.cfg.UnlockMethod != "UNLOCK" || c.maxStateBytes != 64<<20 {
		t.Errorf("defaults not applied: %+v", c.cfg)
	}
	// Zero retry settings are taken literally.
	if c.rc.RetryMax != 0 || c.rc.RetryWaitMin != 0 || c.rc.RetryWaitMax != 0 {
		t.Errorf("retry settings %d %v %v, want zeros", c.rc.RetryMax, c.rc.RetryWaitMin, c.rc.RetryWaitMax)
	}
	d := mustNew(t, DefaultConfig("http://h/s"))
	if d.rc.RetryMax != 2 || d.rc.RetryWaitMin != time.Second || d.rc.RetryWaitMax != 30*time.Second {
		t.Errorf("DefaultConfig retry settings %d %v %v, want 2 1s 30s", d.rc.RetryMax, d.rc.RetryWaitMin, d.rc.RetryWaitMax)
	}
}

func TestConfigString(t *testing.T) {
	t.Parallel()
	cfg := Config{
		Address: "https://alice:url-secret@h/s", Username: "bob", Password: "hunter2",
		ClientPrivateKeyPEM: []byte("KEYMATERIAL"), ClientCertificatePEM: []byte("CERTMATERIAL"),
	}
	want := `stateclient.Config{Address: "https://h/s", LockAddress: "", UnlockAddress: "", Username: "bob", Password: <set>, ClientCertificate: <set>, ClientPrivateKey: <set>, ClientCA: <unset>}`
	for _, got := range []string{cfg.String(), fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprint(cfg.MarshalLog())} {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("String() mismatch (-want +got):\n%s", diff)
		}
	}
}

func TestClientString(t *testing.T) {
	t.Parallel()
	c := mustNew(t, Config{Address: "https://alice:url-secret@h/s", Username: "bob", Password: "hunter2"})
	for _, got := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%v", []*Client{c})} {
		if strings.Contains(got, "hunter2") || strings.Contains(got, "url-secret") {
			t.Errorf("printing the client leaks a secret: %s", got)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	t.Parallel()
	cases := map[int64]string{64 << 20: "64 MiB", 1 << 30: "1 GiB", 3 << 10: "3 KiB", 1000: "1000 bytes", 1<<20 + 1: "1048577 bytes"}
	for n, want := range cases {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
	err := error(&SizeError{Limit: DefaultMaxStateBytes, ContentLength: -1})
	if err.Error() != "state is larger than the 64 MiB limit" || !errors.Is(err, ErrStateTooLarge) {
		t.Errorf("SizeError = %q", err)
	}
}
