package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
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
	dir := t.TempDir()
	ca, caKey, caPEM := newCA(t, "test CA")
	p := &testPKI{caPEM: caPEM, roots: x509.NewCertPool()}
	p.roots.AddCert(ca)

	serverCertPEM, serverKeyPEM := newLeaf(t, ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "stateserver"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	p.clientCertPEM, p.clientKeyPEM = newLeaf(t, ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "terraform"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	other, otherKey, _ := newCA(t, "other CA")
	otherCertPEM, otherKeyPEM := newLeaf(t, other, otherKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "intruder"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})

	var err error
	if p.clientCert, err = tls.X509KeyPair([]byte(p.clientCertPEM), []byte(p.clientKeyPEM)); err != nil {
		t.Fatal(err)
	}
	if p.otherClientCert, err = tls.X509KeyPair([]byte(otherCertPEM), []byte(otherKeyPEM)); err != nil {
		t.Fatal(err)
	}
	p.caFile = writeFile(t, dir, "ca.crt", p.caPEM)
	p.serverCertFile = writeFile(t, dir, "tls.crt", serverCertPEM)
	p.serverKeyFile = writeFile(t, dir, "tls.key", serverKeyPEM)
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

func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func newLeaf(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
