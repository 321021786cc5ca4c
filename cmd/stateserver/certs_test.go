package main

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/infrastate/backend-operator/internal/devpki"
)

// testPKI is a throwaway CA with a server certificate for 127.0.0.1 and
// localhost and a client certificate, as PEM strings and files.
type testPKI struct {
	caPEM, caFile                 string
	roots                         *x509.CertPool
	serverCertFile, serverKeyFile string
	// clientCert is signed by the test CA; otherClientCert by another CA.
	clientCertPEM, clientKeyPEM string
	clientCert, otherClientCert tls.Certificate
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	trusted, err := devpki.New("terraform", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := devpki.New("intruder", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	files, err := trusted.WriteFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{
		caPEM: string(trusted.CACert), caFile: files.CACert, roots: x509.NewCertPool(),
		serverCertFile: files.ServerCert, serverKeyFile: files.ServerKey,
		clientCertPEM: string(trusted.ClientCert), clientKeyPEM: string(trusted.ClientKey),
	}
	if !p.roots.AppendCertsFromPEM(trusted.CACert) {
		t.Fatal("the test CA does not parse")
	}
	if p.clientCert, err = tls.X509KeyPair(trusted.ClientCert, trusted.ClientKey); err != nil {
		t.Fatal(err)
	}
	if p.otherClientCert, err = tls.X509KeyPair(other.ClientCert, other.ClientKey); err != nil {
		t.Fatal(err)
	}
	return p
}

// clientTLS returns a client TLS configuration trusting the test CA and
// presenting cert when it is not nil.
func (p *testPKI) clientTLS(cert *tls.Certificate) *tls.Config {
	tc := &tls.Config{RootCAs: p.roots, MinVersion: tls.VersionTLS12}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	return tc
}
