package controllers

import (
	"crypto/tls"
	"crypto/x509"
	"time"

	. "github.com/onsi/gomega"

	"github.com/infrastate/backend-operator/internal/devpki"
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
	trusted, err := devpki.New("runner", 24*time.Hour)
	Expect(err).NotTo(HaveOccurred())
	unrelated, err := devpki.New("stranger", 24*time.Hour)
	Expect(err).NotTo(HaveOccurred())
	pool := x509.NewCertPool()
	Expect(pool.AppendCertsFromPEM(trusted.CACert)).To(BeTrue())
	return &testCertificates{
		caPEM: trusted.CACert, serverCertPEM: trusted.ServerCert, serverKeyPEM: trusted.ServerKey,
		clientCertPEM: trusted.ClientCert, clientKeyPEM: trusted.ClientKey,
		otherCAPEM: unrelated.CACert, otherKeyPEM: unrelated.ClientKey, caPool: pool,
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
