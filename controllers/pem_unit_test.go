package controllers

import (
	"strings"
	"testing"

	"github.com/onsi/gomega"

	"github.com/infrastate/backend-operator/controllers/internal/conditions"
)

func TestCheckCertificatesAndKeyPair(t *testing.T) {
	certs := newTestCertificatesT(t)
	cases := map[string]struct {
		check   func() error
		wantErr string
	}{
		"a CA bundle":        {check: func() error { return checkCertificates(certs.caPEM, "Secret ns/ca key ca.crt") }},
		"two certificates":   {check: func() error { return checkCertificates(append(certs.caPEM, certs.otherCAPEM...), "x") }},
		"no certificate":     {check: func() error { return checkCertificates([]byte("hello"), "Secret ns/ca key ca.crt") }, wantErr: "Secret ns/ca key ca.crt holds no PEM certificate"},
		"a key is no bundle": {check: func() error { return checkCertificates(certs.clientKeyPEM, "x") }, wantErr: "holds no PEM certificate"},
		"a broken certificate": {check: func() error {
			return checkCertificates([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), "x")
		}, wantErr: "does not parse"},
		"a matching pair":       {check: func() error { return checkKeyPair(certs.clientCertPEM, certs.clientKeyPEM, "Secret ns/c") }},
		"a key of another cert": {check: func() error { return checkKeyPair(certs.clientCertPEM, certs.otherKeyPEM, "Secret ns/c") }, wantErr: "Secret ns/c keys tls.crt and tls.key do not match"},
		"a key that is no key":  {check: func() error { return checkKeyPair(certs.clientCertPEM, []byte("nope"), "Secret ns/c") }, wantErr: "tls.key holds no PEM private key"},
		"a certificate as key":  {check: func() error { return checkKeyPair(certs.clientCertPEM, certs.caPEM, "Secret ns/c") }, wantErr: "tls.key holds no PEM private key"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.check()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
			se, ok := conditions.AsStall(err)
			if !ok || se.Reason != "InvalidCertificate" {
				t.Errorf("error %v is not an InvalidCertificate stall", err)
			}
			for _, secret := range [][]byte{certs.clientKeyPEM, certs.otherKeyPEM} {
				if strings.Contains(err.Error(), string(secret[40:80])) {
					t.Errorf("error message leaks key material: %v", err)
				}
			}
		})
	}
}

// newTestCertificatesT generates the suite's certificates in a plain test.
func newTestCertificatesT(t *testing.T) *testCertificates {
	t.Helper()
	gomega.RegisterTestingT(t)
	return newTestCertificates()
}
