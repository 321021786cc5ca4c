package stateclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"testing"
)

func TestTLS(t *testing.T) {
	t.Parallel()
	ca := newPKI(t, "client")
	otherCA := newPKI(t, "stranger")
	serverPair := ca.serverPair
	clientCert, clientKey := ca.ClientCert, ca.ClientKey
	strangerCert, strangerKey := otherCA.ClientCert, otherCA.ClientKey
	pool := ca.pool

	cases := map[string]tlsCase{
		"CA ok":                 {caPEM: ca.CACert, attempts: 1},
		"CA bundle":             {caPEM: append(append([]byte{}, otherCA.CACert...), ca.CACert...), attempts: 1},
		"wrong CA":              {caPEM: otherCA.CACert, wantErr: "giving up after 1 attempt(s)", certErr: true, attempts: 1},
		"system roots":          {wantErr: "certificate signed by unknown authority", certErr: true, attempts: 1},
		"skip verification":     {skip: true, attempts: 1},
		"skip beats wrong CA":   {skip: true, caPEM: otherCA.CACert, attempts: 1},
		"mTLS":                  {mTLS: true, caPEM: ca.CACert, certPEM: clientCert, keyPEM: clientKey, attempts: 1},
		"mTLS no client cert":   {mTLS: true, caPEM: ca.CACert, wantErr: "giving up after 3 attempt(s)"},
		"mTLS unknown client":   {mTLS: true, caPEM: ca.CACert, certPEM: strangerCert, keyPEM: strangerKey, wantErr: "giving up after 3 attempt(s)"},
		"mTLS and skip":         {mTLS: true, skip: true, certPEM: clientCert, keyPEM: clientKey, attempts: 1},
		"client cert, no mTLS":  {caPEM: ca.CACert, certPEM: clientCert, keyPEM: clientKey, attempts: 1},
		"mTLS over system root": {mTLS: true, certPEM: clientCert, keyPEM: clientKey, wantErr: "unknown authority", certErr: true},
	}
	// Every case runs twice: with the TLS configuration built for the
	// client, and with one from a TLSCache the cases share.
	configs := NewTLSCache(4)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, serverPair, pool)
		})
		t.Run(name+", from a TLSCache", func(t *testing.T) {
			t.Parallel()
			tc.run(t, serverPair, pool, WithTLSCache(configs))
		})
	}
}

// tlsCase is a client's TLS material, what the server requires, and the
// outcome of a read.
type tlsCase struct {
	mTLS     bool // the server requires a client certificate from the pool
	caPEM    []byte
	certPEM  []byte
	keyPEM   []byte
	skip     bool
	wantErr  string
	certErr  bool // a certificate verification error, not retried
	attempts int  // connections the server accepted; 0: not checked
}

// run reads a state from a TLS server with serverPair with a client of
// tc's material built with opts, and checks the outcome.
func (tc tlsCase) run(t *testing.T, serverPair tls.Certificate, pool *x509.CertPool, opts ...Option) {
	t.Helper()
	cfg := &tls.Config{Certificates: []tls.Certificate{serverPair}, MinVersion: tls.VersionTLS12}
	if tc.mTLS {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = pool
	}
	srv, conns := newTLSServer(t, cfg, respond(http.StatusOK, smallState))
	c := fastConfig(srv.URL)
	c.ClientCACertificatePEM, c.ClientCertificatePEM, c.ClientPrivateKeyPEM = tc.caPEM, tc.certPEM, tc.keyPEM
	c.SkipCertVerification = tc.skip
	data, err := fetchAll(ctxT(t), mustNew(t, c, opts...))
	checkErr(t, err, tc.wantErr, nil)
	if tc.wantErr == "" && (string(data) != smallState) {
		t.Errorf("StreamState() read %q", data)
	}
	var ce *tls.CertificateVerificationError
	if got := errors.As(err, &ce); got != tc.certErr {
		t.Errorf("errors.As(%v, *tls.CertificateVerificationError) = %v, want %v", err, got, tc.certErr)
	}
	if tc.attempts != 0 && conns.count() != tc.attempts {
		t.Errorf("server accepted %d connections, want %d", conns.count(), tc.attempts)
	}
}

// TestTLSTransportBase checks that WithTransport's TLS settings are kept
// and the Config's applied on top, on a clone.
func TestTLSTransportBase(t *testing.T) {
	t.Parallel()
	base := &http.Transport{TLSClientConfig: &tls.Config{ServerName: "example.test", MinVersion: tls.VersionTLS13}}
	c := mustNew(t, Config{Address: "https://127.0.0.1/state", SkipCertVerification: true}, WithTransport(base))
	tr := c.rc.HTTPClient.Transport.(*http.Transport)
	if tr == base || tr.TLSClientConfig == base.TLSClientConfig {
		t.Fatal("the base transport was not cloned")
	}
	if got := tr.TLSClientConfig; got.ServerName != "example.test" || got.MinVersion != tls.VersionTLS13 || !got.InsecureSkipVerify {
		t.Errorf("TLS config = ServerName %q, MinVersion %x, InsecureSkipVerify %v", got.ServerName, got.MinVersion, got.InsecureSkipVerify)
	}
	if base.TLSClientConfig.InsecureSkipVerify {
		t.Error("the base transport was modified")
	}
}
