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
	hasCert, hasKey := len(cfg.ClientCertificatePEM) > 0, len(cfg.ClientPrivateKeyPEM) > 0
	if !cfg.SkipCertVerification && !hasCert && !hasKey && len(cfg.ClientCACertificatePEM) == 0 {
		return base, nil
	}
	var tc *tls.Config
	if base != nil {
		tc = base.Clone()
	} else {
		tc = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if cfg.SkipCertVerification {
		tc.InsecureSkipVerify = true // explicitly requested, as Terraform's skip_cert_verification
	}
	if len(cfg.ClientCACertificatePEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.ClientCACertificatePEM) {
			return nil, fmt.Errorf("%w: the CA certificate PEM contains no valid certificate", ErrInvalidConfig)
		}
		tc.RootCAs = pool
	}
	switch {
	case hasCert && !hasKey:
		return nil, fmt.Errorf("%w: a client certificate needs a client private key", ErrInvalidConfig)
	case hasKey && !hasCert:
		return nil, fmt.Errorf("%w: a client private key needs a client certificate", ErrInvalidConfig)
	case hasCert && hasKey:
		// crypto/tls's errors name PEM block types, never their content.
		pair, err := tls.X509KeyPair(cfg.ClientCertificatePEM, cfg.ClientPrivateKeyPEM)
		if err != nil {
			return nil, fmt.Errorf("%w: cannot load the client certificate and key: %w", ErrInvalidConfig, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}
