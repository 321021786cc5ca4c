package stateclient

import (
	"crypto/tls"
	"errors"
	"testing"
)

// TestTLSCache checks when two Configs get their TLS configuration from
// the same parsed material: only when all of it is the same, never for
// two clients with different client certificates or keys or CAs; and that
// each client gets a configuration of its own, with its own verification
// setting.
func TestTLSCache(t *testing.T) {
	ca, other := newPKI(t, "client"), newPKI(t, "other")
	material := func(edit func(*Config)) Config {
		cfg := Config{ClientCACertificatePEM: ca.CACert, ClientCertificatePEM: ca.ClientCert, ClientPrivateKeyPEM: ca.ClientKey}
		if edit != nil {
			edit(&cfg)
		}
		return cfg
	}
	cases := map[string]struct {
		second Config
		shared bool
	}{
		"the same material":                       {second: material(func(c *Config) { c.Address, c.Username, c.Password = "https://other/state", "u", "p" }), shared: true},
		"the same material, verification skipped": {second: material(func(c *Config) { c.SkipCertVerification = true }), shared: true},
		"another CA":                              {second: material(func(c *Config) { c.ClientCACertificatePEM = other.CACert })},
		"another client certificate and key": {second: material(func(c *Config) {
			c.ClientCertificatePEM, c.ClientPrivateKeyPEM = other.ClientCert, other.ClientKey
		})},
		"no client certificate": {second: material(func(c *Config) { c.ClientCertificatePEM, c.ClientPrivateKeyPEM = nil, nil })},
		"a CA bundle of both":   {second: material(func(c *Config) { c.ClientCACertificatePEM = append(append([]byte{}, ca.CACert...), other.CACert...) })},
	}
	base := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cache := NewTLSCache(8)
			first, err := cache.configure(base, material(nil))
			if err != nil {
				t.Fatal(err)
			}
			second, err := cache.configure(base, tc.second)
			if err != nil {
				t.Fatal(err)
			}
			if first == second || first == base || second == base {
				t.Fatal("two clients, or a client and the base, got the same *tls.Config")
			}
			if second.InsecureSkipVerify != tc.second.SkipCertVerification || first.InsecureSkipVerify {
				t.Errorf("InsecureSkipVerify = %v and %v, want false and %v", first.InsecureSkipVerify, second.InsecureSkipVerify, tc.second.SkipCertVerification)
			}
			sharedPool := first.RootCAs == second.RootCAs
			sharedPair := len(second.Certificates) > 0 && first.Certificates[0].PrivateKey == second.Certificates[0].PrivateKey
			if got := sharedPool || sharedPair; got != tc.shared {
				t.Errorf("parsed material shared: %v (pool %v, key pair %v), want %v", got, sharedPool, sharedPair, tc.shared)
			}
			want := 2
			if tc.shared {
				want = 1
			}
			if n := cache.Len(); n != want {
				t.Errorf("held %d materials, want %d", n, want)
			}
		})
	}
}

// TestTLSCacheCopies checks that a transport changing its configuration
// (it adds its protocols to NextProtos) changes neither the base nor what
// another client gets.
func TestTLSCacheCopies(t *testing.T) {
	ca := newPKI(t, "client")
	cache := NewTLSCache(8)
	cfg := Config{ClientCACertificatePEM: ca.CACert}
	first, err := cache.configure(nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	first.NextProtos = append(first.NextProtos, "h2")
	first.ServerName = "changed"
	second, err := cache.configure(nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.NextProtos) != 0 || second.ServerName != "" {
		t.Errorf("a client's change reached another: NextProtos %q, ServerName %q", second.NextProtos, second.ServerName)
	}
}

// TestTLSCacheBound checks that the least recently used material is
// dropped beyond the limit, that material which does not parse is an
// error and is not recorded, and that a Config without TLS material
// records nothing.
func TestTLSCacheBound(t *testing.T) {
	a, b, c := newPKI(t, "a"), newPKI(t, "b"), newPKI(t, "c")
	cache := NewTLSCache(2)
	use := func(p *testPKI) {
		t.Helper()
		if _, err := cache.configure(nil, Config{ClientCACertificatePEM: p.CACert}); err != nil {
			t.Fatal(err)
		}
	}
	use(a)
	use(b)
	use(a) // b is now the least recently used
	use(c)
	if n := cache.Len(); n != 2 {
		t.Fatalf("held %d materials, want 2", n)
	}
	for _, ca := range []struct {
		name string
		pki  *testPKI
		want bool
	}{{"a", a, true}, {"b", b, false}, {"c", c, true}} {
		_, held := cache.entries[materialKey(Config{ClientCACertificatePEM: ca.pki.CACert})]
		if held != ca.want {
			t.Errorf("the material of CA %s held: %v, want %v", ca.name, held, ca.want)
		}
	}

	if _, err := cache.configure(nil, Config{ClientCACertificatePEM: []byte("not a certificate")}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("invalid CA: error %v, want ErrInvalidConfig", err)
	}
	if tc, err := cache.configure(nil, Config{Address: "https://h/state", SkipCertVerification: true}); err != nil || tc == nil || !tc.InsecureSkipVerify {
		t.Errorf("verification skipped, no material: %v, %v", tc, err)
	}
	if n := cache.Len(); n != 2 {
		t.Errorf("held %d materials, want 2", n)
	}
}
