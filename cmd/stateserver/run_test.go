package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// runInProcess starts run with args and env in a goroutine and returns the
// base URL it listens on, its log, and stop, which cancels run and returns
// its error.
func runInProcess(t *testing.T, args []string, env map[string]string) (string, *testtools.SyncBuffer, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	logs := &testtools.SyncBuffer{}
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = run(ctx, args, envFunc(env), logs)
	}()
	stopped := false
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("run did not return 30s after cancellation; log:\n%s", logs)
			}
		}
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return waitForURL(t, logs, done), logs, stop
}

func TestRunServesAndStops(t *testing.T) {
	base, logs, stop := runInProcess(t, []string{"--listen", "127.0.0.1:0"}, nil)
	if !strings.HasPrefix(base, "http://127.0.0.1:") || strings.HasSuffix(base, ":0") {
		t.Errorf("listening URL %q, want http://127.0.0.1:<bound port>", base)
	}
	c := newDirectClient(t, base, nil)
	type answer struct {
		Status int
		Body   string
	}
	var got []answer
	for _, r := range []struct {
		method string
		body   []byte
	}{
		{http.MethodGet, nil},
		{http.MethodPost, []byte(`{"serial":1}`)},
		{"LOCK", []byte(`{"ID":"a"}`)},
		{http.MethodGet, nil},
	} {
		status, body := c.do(r.method, "/state/x", r.body)
		got = append(got, answer{status, body})
	}
	want := []answer{{404, "no state\n"}, {200, ""}, {200, ""}, {200, `{"serial":1}`}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if err := stop(); err != nil {
		t.Errorf("run returned %v after cancellation, want nil", err)
	}
	requests := linesWith(logs.String(), "msg=request")
	if len(requests) != 4 {
		t.Errorf("got %d request log lines, want 4:\n%s", len(requests), logs)
	}
	for _, line := range requests {
		for _, attr := range []string{"method=", "path=/state/x", "status=", "duration="} {
			if !strings.Contains(line, attr) {
				t.Errorf("request log line %q has no %s", line, attr)
			}
		}
	}
	if len(linesWith(logs.String(), "msg=stopped")) != 1 {
		t.Errorf("no \"stopped\" line in the log:\n%s", logs)
	}
}

func TestRunBasicAuth(t *testing.T) {
	const password = "correct horse battery staple"
	base, logs, stop := runInProcess(t,
		[]string{"--listen", "127.0.0.1:0", "--username", "terraform"},
		map[string]string{"STATESERVER_PASSWORD": password})
	c := newDirectClient(t, base, nil)

	if status, _ := c.do(http.MethodGet, "/state/x", nil); status != http.StatusUnauthorized {
		t.Errorf("without credentials: status %d, want 401", status)
	}
	c.user, c.pass = "terraform", "wrong"
	if status, _ := c.do(http.MethodGet, "/state/x", nil); status != http.StatusForbidden {
		t.Errorf("with a wrong password: status %d, want 403", status)
	}
	c.pass = password
	if status, _ := c.do(http.MethodGet, "/state/x", nil); status != http.StatusNotFound {
		t.Errorf("with the right credentials: status %d, want 404 (no state yet)", status)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "horse") {
		t.Errorf("the log contains the password:\n%s", logs)
	}
	if len(linesWith(logs.String(), "clear text")) != 1 {
		t.Errorf("no warning about basic auth without TLS:\n%s", logs)
	}
}

func TestRunDataDirSurvivesRestart(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", dataDir}

	base, _, stop := runInProcess(t, args, nil)
	c := newDirectClient(t, base, nil)
	c.do(http.MethodPost, "/state/prod", []byte(`{"serial":7}`))
	c.do("LOCK", "/state/prod", lockInfo("kept-across-restarts"))
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	base, _, _ = runInProcess(t, args, nil)
	c = newDirectClient(t, base, nil)
	if status, body := c.do(http.MethodGet, "/state/prod", nil); status != http.StatusOK || body != `{"serial":7}` {
		t.Errorf("GET after restart: %d %q, want 200 with the state", status, body)
	}
	if status, body := c.do("LOCK", "/state/prod", lockInfo("other")); status != http.StatusLocked || !strings.Contains(body, "kept-across-restarts") {
		t.Errorf("LOCK after restart: %d %q, want 423 with the kept lock", status, body)
	}
}

func TestRunTLS(t *testing.T) {
	pki := newTestPKI(t)
	tlsArgs := []string{"--listen", "127.0.0.1:0", "--tls-cert", pki.serverCertFile, "--tls-key", pki.serverKeyFile}

	t.Run("server certificate", func(t *testing.T) {
		base, _, _ := runInProcess(t, tlsArgs, nil)
		if !strings.HasPrefix(base, "https://") {
			t.Fatalf("listening URL %q, want https", base)
		}
		if status, _ := newDirectClient(t, base, pki.clientTLS(nil)).do(http.MethodGet, "/state/x", nil); status != http.StatusNotFound {
			t.Errorf("status %d, want 404", status)
		}
		if _, _, err := newDirectClient(t, base, nil).try(http.MethodGet, "/state/x", nil); err == nil {
			t.Error("a client without the CA connected, want a certificate error")
		}
		plain := newDirectClient(t, strings.Replace(base, "https://", "http://", 1), nil)
		if status, _, err := plain.try(http.MethodGet, "/state/x", nil); err == nil && status != http.StatusBadRequest {
			t.Errorf("plain HTTP on the TLS port answered %d", status)
		}
	})

	t.Run("client certificates", func(t *testing.T) {
		base, _, _ := runInProcess(t, append(tlsArgs, "--client-ca", pki.caFile), nil)
		cases := map[string]struct {
			cert   bool
			other  bool
			wantOK bool
		}{
			"no client certificate":           {},
			"certificate from another CA":     {cert: true, other: true},
			"certificate from the trusted CA": {cert: true, wantOK: true},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				cfg := pki.clientTLS(nil)
				if tc.cert {
					cfg = pki.clientTLS(&pki.clientCert)
					if tc.other {
						cfg = pki.clientTLS(&pki.otherClientCert)
					}
				}
				status, _, err := newDirectClient(t, base, cfg).try(http.MethodGet, "/state/x", nil)
				if tc.wantOK && (err != nil || status != http.StatusNotFound) {
					t.Errorf("got %d, %v; want 404", status, err)
				}
				if !tc.wantOK && err == nil {
					t.Errorf("got %d, want a TLS error", status)
				}
			})
		}
	})
}

// TestOpenServerWarning checks the WARNING printed when nothing
// authenticates the clients of a server reachable from other hosts.
func TestOpenServerWarning(t *testing.T) {
	pki := newTestPKI(t)
	const warning = "WARNING: anyone who can reach"
	cases := map[string]struct {
		args        []string
		env         map[string]string
		wantWarning bool
	}{
		"loopback without a username": {
			args: []string{"--listen", "127.0.0.1:0"},
		},
		"localhost without a username": {
			args: []string{"--listen", "localhost:0"},
		},
		"all interfaces without a username": {
			args: []string{"--listen", "0.0.0.0:0"}, wantWarning: true,
		},
		"all interfaces with TLS but no client certificates": {
			args:        []string{"--listen", "0.0.0.0:0", "--tls-cert", pki.serverCertFile, "--tls-key", pki.serverKeyFile},
			wantWarning: true,
		},
		"all interfaces with a username": {
			args: []string{"--listen", "0.0.0.0:0", "--username", "terraform"},
			env:  map[string]string{"STATESERVER_PASSWORD": "pw"},
		},
		"all interfaces with client certificates": {
			args: []string{"--listen", "0.0.0.0:0", "--tls-cert", pki.serverCertFile, "--tls-key", pki.serverKeyFile, "--client-ca", pki.caFile},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, logs, stop := runInProcess(t, tc.args, tc.env)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			got := linesWith(logs.String(), warning)
			if !tc.wantWarning {
				if len(got) != 0 {
					t.Errorf("unexpected warning: %q", got)
				}
				return
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], "WARNING: ") || !strings.Contains(got[0], "can read and overwrite every state") {
				t.Errorf("warning lines %q, want one line starting with WARNING: that says anyone can read and overwrite every state; log:\n%s", got, logs)
			}
		})
	}
}
