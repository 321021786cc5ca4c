package main

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// listeningRE finds the URL in the "listening on" log line.
var listeningRE = regexp.MustCompile(`listening on (https?://[^\s"]+)`)

// logMentions reports whether logs holds text within a few seconds: the
// server logs a refused TLS handshake from the goroutine of the refused
// connection, which may run after the client already gave up.
func logMentions(logs *testtools.SyncBuffer, text string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), text) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// waitForURL polls logs until the "listening on" line shows up, done is
// closed (the server stopped) or the timeout passes.
func waitForURL(t *testing.T, logs *testtools.SyncBuffer, done <-chan struct{}) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if m := listeningRE.FindStringSubmatch(logs.String()); m != nil {
			return m[1]
		}
		select {
		case <-done:
			if m := listeningRE.FindStringSubmatch(logs.String()); m != nil {
				return m[1]
			}
			t.Fatalf("the server stopped before listening; its log:\n%s", logs)
		case <-deadline:
			t.Fatalf("no \"listening on\" line after 30s; the log:\n%s", logs)
		case <-tick.C:
		}
	}
}

// directClient sends protocol requests to a running server itself, for what
// terraform does not do (holding a lock, checking the stored state).
type directClient struct {
	t          *testing.T
	base       string // scheme://host:port
	client     *http.Client
	user, pass string
}

func newDirectClient(t *testing.T, base string, tlsConfig *tls.Config) *directClient {
	t.Helper()
	transport := &http.Transport{TLSClientConfig: tlsConfig}
	t.Cleanup(transport.CloseIdleConnections)
	return &directClient{t: t, base: base, client: &http.Client{Transport: transport, Timeout: 30 * time.Second}}
}

// do sends one request and returns the status and body; transport errors
// fail the test.
func (c *directClient) do(method, path string, body []byte) (int, string) {
	c.t.Helper()
	status, respBody, err := c.try(method, path, body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return status, respBody
}

// try is do without failing the test on transport errors.
func (c *directClient) try(method, path string, body []byte) (int, string, error) {
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.base+path, reader)
	if err != nil {
		return 0, "", err
	}
	if c.user != "" {
		req.SetBasicAuth(c.user, c.pass)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	return resp.StatusCode, string(b), nil
}

// lockInfo returns a LockInfo JSON document with this ID, as Terraform
// writes it.
func lockInfo(id string) []byte {
	return []byte(`{"ID":"` + id + `","Operation":"OperationTypeApply","Info":"held by the test","Who":"test@localhost","Version":"1.5.7","Created":"` +
		time.Now().UTC().Format(time.RFC3339Nano) + `","Path":""}`)
}

// envFunc turns a map into a getenv function.
func envFunc(env map[string]string) func(string) string {
	return func(key string) string { return env[key] }
}

// lines returns the lines of s containing substr.
func linesWith(s, substr string) []string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, substr) {
			out = append(out, strings.TrimRight(line, "\n"))
		}
	}
	return out
}
