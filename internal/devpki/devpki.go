// Package devpki issues a throwaway certificate authority with one server
// and one client certificate, for the local demo (`make run`) and the end to
// end tests: the reference state server serves HTTPS with the server
// certificate and requires the client certificate (mutual TLS).
//
// The keys are ECDSA P-256 in PKCS #8, accepted by Go's crypto/tls, by
// Terraform's http backend and by `kubectl create secret tls`. Nothing here
// is meant for production use.
package devpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI holds the PEM encoded certificates and keys.
type PKI struct {
	// CACert signs both leaf certificates; trust it on both sides.
	CACert []byte
	// ServerCert and ServerKey are valid for localhost, 127.0.0.1 and ::1.
	ServerCert, ServerKey []byte
	// ClientCert and ClientKey authenticate a client (ExtKeyUsageClientAuth).
	ClientCert, ClientKey []byte
}

// Files are the paths WriteFiles wrote.
type Files struct {
	CACert, ServerCert, ServerKey, ClientCert, ClientKey string
}

// New issues a CA, a server certificate for the loopback names and a client
// certificate whose subject is clientName, all valid for validity (starting
// an hour ago, to tolerate clock skew).
func New(clientName string, validity time.Duration) (*PKI, error) {
	if validity <= 0 {
		return nil, errors.New("devpki: validity must be positive")
	}
	notBefore := time.Now().Add(-time.Hour)
	notAfter := time.Now().Add(validity)

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("devpki: generating the CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "backend-operator demo CA"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := sign(caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("devpki: parsing the CA: %w", err)
	}

	p := &PKI{CACert: encodeCert(caDER)}
	p.ServerCert, p.ServerKey, err = leaf(ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "stateserver"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, err
	}
	p.ClientCert, p.ClientKey, err = leaf(ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: clientName},
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// WriteFiles writes ca.crt, server.crt, server.key, client.crt and
// client.key into dir (created if missing), keys with mode 0600.
func (p *PKI) WriteFiles(dir string) (Files, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Files{}, fmt.Errorf("devpki: %w", err)
	}
	f := Files{
		CACert:     filepath.Join(dir, "ca.crt"),
		ServerCert: filepath.Join(dir, "server.crt"),
		ServerKey:  filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.crt"),
		ClientKey:  filepath.Join(dir, "client.key"),
	}
	for path, data := range map[string][]byte{
		f.CACert: p.CACert, f.ServerCert: p.ServerCert, f.ServerKey: p.ServerKey,
		f.ClientCert: p.ClientCert, f.ClientKey: p.ClientKey,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return Files{}, fmt.Errorf("devpki: %w", err)
		}
	}
	return f, nil
}

// leaf issues a certificate from tmpl signed by the CA.
func leaf(ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("devpki: generating a key: %w", err)
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := sign(tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("devpki: encoding a key: %w", err)
	}
	return encodeCert(der), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// sign gives tmpl a random serial number and signs it.
func sign(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, signer *ecdsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("devpki: generating a serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, fmt.Errorf("devpki: signing %q: %w", tmpl.Subject.CommonName, err)
	}
	return der, nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
