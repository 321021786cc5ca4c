package devpki

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMutualTLS proves the certificates work together: a server with the
// server pair that requires client certificates signed by the CA accepts a
// client that trusts the CA and presents the client pair.
func TestMutualTLS(t *testing.T) {
	p, err := New("runner", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(p.CACert) {
		t.Fatal("CA does not parse")
	}
	serverPair, err := tls.X509KeyPair(p.ServerCert, p.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	clientPair, err := tls.X509KeyPair(p.ClientCert, p.ClientKey)
	if err != nil {
		t.Fatal(err)
	}

	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{serverPair},
		ClientCAs:    roots,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan string, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			accepted <- "accept: " + err.Error()
			return
		}
		defer conn.Close()
		tc := conn.(*tls.Conn)
		if err := tc.HandshakeContext(t.Context()); err != nil {
			accepted <- "handshake: " + err.Error()
			return
		}
		accepted <- tc.ConnectionState().PeerCertificates[0].Subject.CommonName
		_, _ = io.WriteString(tc, "ok")
	}()

	_, port, _ := net.SplitHostPort(ln.Addr().String())
	dialer := &tls.Dialer{Config: &tls.Config{
		RootCAs:      roots,
		Certificates: []tls.Certificate{clientPair},
		MinVersion:   tls.VersionTLS12,
	}}
	conn, err := dialer.DialContext(t.Context(), "tcp", net.JoinHostPort("localhost", port))
	if err != nil {
		t.Fatalf("dialing with the client certificate: %v", err)
	}
	defer conn.Close()
	if _, err := io.ReadAll(conn); err != nil {
		t.Fatal(err)
	}
	if got := <-accepted; got != "runner" {
		t.Fatalf("server saw client %q, want runner", got)
	}
}

// TestServerNames checks the server certificate for every loopback name.
func TestServerNames(t *testing.T) {
	p, err := New("runner", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(p.CACert)
	pair, err := tls.X509KeyPair(p.ServerCert, p.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"localhost", "127.0.0.1", "::1"} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Errorf("server certificate for %s: %v", name, err)
		}
	}
}

func TestWriteFiles(t *testing.T) {
	p, err := New("runner", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "pki")
	files, err := p.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.LoadX509KeyPair(files.ServerCert, files.ServerKey); err != nil {
		t.Errorf("server pair: %v", err)
	}
	if _, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey); err != nil {
		t.Errorf("client pair: %v", err)
	}
	info, err := os.Stat(files.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("client key mode = %o, want 600", perm)
	}
}

func TestNewRejectsZeroValidity(t *testing.T) {
	if _, err := New("runner", 0); err == nil {
		t.Fatal("New(0) succeeded, want an error")
	}
}
