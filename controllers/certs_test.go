package controllers

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
	"time"

	. "github.com/onsi/gomega"
)

// testCertificates is a CA with a server certificate for 127.0.0.1 and a
// client certificate, generated for the suite, plus a second, unrelated CA
// and key for negative cases.
type testCertificates struct {
	caPEM, serverCertPEM, serverKeyPEM, clientCertPEM, clientKeyPEM []byte
	otherCAPEM, otherKeyPEM                                         []byte
	caPool                                                          *x509.CertPool
}

func newTestCertificates() *testCertificates {
	caKey, caCert, caPEM := newCA("infrastate test CA")
	_, _, otherCAPEM := newCA("unrelated CA")
	otherKey := newKey()

	serverCertPEM, serverKeyPEM := newLeaf(caCert, caKey, "state-server", x509.ExtKeyUsageServerAuth)
	clientCertPEM, clientKeyPEM := newLeaf(caCert, caKey, "runner", x509.ExtKeyUsageClientAuth)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &testCertificates{
		caPEM: caPEM, serverCertPEM: serverCertPEM, serverKeyPEM: serverKeyPEM,
		clientCertPEM: clientCertPEM, clientKeyPEM: clientKeyPEM,
		otherCAPEM: otherCAPEM, otherKeyPEM: keyPEM(otherKey), caPool: pool,
	}
}

// serverTLSConfig requires a client certificate signed by the CA.
func (c *testCertificates) serverTLSConfig() *tls.Config {
	pair, err := tls.X509KeyPair(c.serverCertPEM, c.serverKeyPEM)
	Expect(err).NotTo(HaveOccurred())
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientCAs:    c.caPool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}
}

func newKey() *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	return key
}

func keyPEM(key *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func newCA(name string) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	key := newKey()
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
	Expect(err).NotTo(HaveOccurred())
	cert, err := x509.ParseCertificate(der)
	Expect(err).NotTo(HaveOccurred())
	return key, cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func newLeaf(ca *x509.Certificate, caKey *ecdsa.PrivateKey, name string, usage x509.ExtKeyUsage) ([]byte, []byte) {
	key := newKey()
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM(key)
}
