package controllers

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"strings"

	corev1 "k8s.io/api/core/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
)

// checkCertificates verifies that data is a PEM bundle of at least one
// certificate, every one of which parses. where names the Secret or
// ConfigMap and key; the PEM itself never appears in the error.
func checkCertificates(data []byte, where string) error {
	var count int
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return conditions.Stall(backendsv1alpha1.InvalidCertificateReason,
				"%s holds a certificate that does not parse: put the certificate in it again, PEM-encoded", where)
		}
		count++
	}
	if count == 0 {
		return conditions.Stall(backendsv1alpha1.InvalidCertificateReason, "%s holds no PEM certificate: put the PEM certificates in it", where)
	}
	return nil
}

// checkKeyPair verifies that a PEM certificate and private key parse and
// belong together. where names the Secret.
func checkKeyPair(certPEM, keyPEM []byte, where string) error {
	if err := checkCertificates(certPEM, where+" key "+corev1.TLSCertKey); err != nil {
		return err
	}
	if !parsesAsPrivateKey(keyPEM) {
		return conditions.Stall(backendsv1alpha1.InvalidCertificateReason,
			"%s key %s holds no PEM private key that parses: create the Secret again from the key pair (kubectl create secret tls)",
			where, corev1.TLSPrivateKeyKey)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return conditions.Stall(backendsv1alpha1.InvalidCertificateReason,
			"%s keys %s and %s do not match, the private key does not belong to the certificate: "+
				"create the Secret again from a certificate and its own key (kubectl create secret tls)", where, corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	}
	return nil
}

// parsesAsPrivateKey reports whether data holds a PEM private key in one of
// the encodings crypto/tls accepts.
func parsesAsPrivateKey(data []byte) bool {
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return false
		}
		if block.Type != "PRIVATE KEY" && !strings.HasSuffix(block.Type, " PRIVATE KEY") {
			continue
		}
		if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
			return true
		}
		if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
			return true
		}
		if _, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
			return true
		}
		return false
	}
}
