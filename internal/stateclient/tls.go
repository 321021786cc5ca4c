package stateclient

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
)

// configureTLS applies the TLS attributes of cfg to base (which may be nil)
// and returns the result, the way Terraform's http backend does: a CA PEM
// replaces the system roots, a client certificate and key must come
// together and match, and SkipCertVerification disables verification.
// It returns base unchanged when cfg sets no TLS attribute.
//
// Errors never quote PEM input.
func configureTLS(base *tls.Config, cfg Config) (*tls.Config, error) {
	if !hasTLSAttributes(cfg) {
		return base, nil
	}
	m, err := parseTLSMaterial(cfg)
	if err != nil {
		return nil, err
	}
	return m.apply(base, cfg.SkipCertVerification), nil
}

// hasTLSAttributes reports whether cfg sets a TLS attribute.
func hasTLSAttributes(cfg Config) bool {
	return cfg.SkipCertVerification || hasTLSMaterial(cfg)
}

// hasTLSMaterial reports whether cfg holds a CA, a client certificate or
// a client key.
func hasTLSMaterial(cfg Config) bool {
	return len(cfg.ClientCertificatePEM) > 0 || len(cfg.ClientPrivateKeyPEM) > 0 || len(cfg.ClientCACertificatePEM) > 0
}

// tlsMaterial is what the TLS material of a Config parses to. It is never
// changed once parsed, so that clients may share it.
type tlsMaterial struct {
	// roots replace the system roots; nil keeps them.
	roots *x509.CertPool
	// certificates are the client certificate and key, or none.
	certificates []tls.Certificate
}

// parseTLSMaterial parses cfg's CA and client certificate and key.
func parseTLSMaterial(cfg Config) (tlsMaterial, error) {
	var m tlsMaterial
	hasCert, hasKey := len(cfg.ClientCertificatePEM) > 0, len(cfg.ClientPrivateKeyPEM) > 0
	if len(cfg.ClientCACertificatePEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.ClientCACertificatePEM) {
			return m, fmt.Errorf("%w: the CA certificate PEM contains no valid certificate", ErrInvalidConfig)
		}
		m.roots = pool
	}
	switch {
	case hasCert && !hasKey:
		return m, fmt.Errorf("%w: a client certificate needs a client private key", ErrInvalidConfig)
	case hasKey && !hasCert:
		return m, fmt.Errorf("%w: a client private key needs a client certificate", ErrInvalidConfig)
	case hasCert && hasKey:
		// crypto/tls's errors name PEM block types, never their content.
		pair, err := tls.X509KeyPair(cfg.ClientCertificatePEM, cfg.ClientPrivateKeyPEM)
		if err != nil {
			return m, fmt.Errorf("%w: cannot load the client certificate and key: %w", ErrInvalidConfig, err)
		}
		m.certificates = []tls.Certificate{pair}
	}
	return m, nil
}

// apply returns a copy of base (which may be nil) with m, and with
// verification disabled when skip is set.
func (m tlsMaterial) apply(base *tls.Config, skip bool) *tls.Config {
	var tc *tls.Config
	if base != nil {
		tc = base.Clone()
	} else {
		tc = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if skip {
		tc.InsecureSkipVerify = true // explicitly requested, as Terraform's skip_cert_verification
	}
	if m.roots != nil {
		tc.RootCAs = m.roots
	}
	if m.certificates != nil {
		tc.Certificates = m.certificates
	}
	return tc
}
