package main

import (
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the conformance golden files in testdata")

const gitlabToken = "glpat-golden-token"

// gitlabServer is the command line of a GitLab mode server for the user
// ci-bot, with role.
func gitlabServer(role string) ([]string, map[string]string) {
	return []string{"--gitlab", "--username", "ci-bot", "--gitlab-role", role}, map[string]string{"STATESERVER_PASSWORD": gitlabToken}
}

// TestConformanceGolden runs `stateserver conformance` against the server
// started in each of its modes, over real TCP, and compares the report
// with testdata/conformance/<mode>.txt (go test -run TestConformanceGolden
// -update rewrites them). Every run must remove its scratch state.
func TestConformanceGolden(t *testing.T) {
	gitlabArgs, gitlabEnv := gitlabServer("maintainer")
	developerArgs, developerEnv := gitlabServer("developer")
	gitlabCheck := []string{"--gitlab", "--username", "ci-bot", "--password-env", "GITLAB_TOKEN"}
	cases := map[string]struct {
		server  []string
		env     map[string]string
		check   []string
		gitlab  bool
		wantErr bool
	}{
		"holder-423":              {},
		"holder-409":              {server: []string{"--conflict", "holder-409"}},
		"text-409":                {server: []string{"--conflict", "text-409"}},
		"text-423":                {server: []string{"--conflict", "text-423"}},
		"reentrant-lock":          {server: []string{"--reentrant-lock"}},
		"reentrant-lock-text-423": {server: []string{"--reentrant-lock", "--conflict", "text-423"}},
		"ignores-body":            {server: []string{"--unlock", "ignores-body"}},
		"ignores-body-text-409":   {server: []string{"--unlock", "ignores-body", "--conflict", "text-409"}},
		"exact-body":              {server: []string{"--unlock", "exact-body"}},
		"unlock-bodies-empty":     {server: []string{"--unlock-bodies", "empty"}},
		"unlock-bodies-id":        {server: []string{"--unlock-bodies", "id"}},
		"unlock-bodies-none-text": {server: []string{"--unlock-bodies", "none", "--conflict", "text-423"}},
		"gitlab":                  {server: gitlabArgs, env: gitlabEnv, check: gitlabCheck, gitlab: true},
		"gitlab-developer":        {server: developerArgs, env: developerEnv, check: gitlabCheck, gitlab: true, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base, _, _ := runInProcess(t, append([]string{"--listen", "127.0.0.1:0"}, tc.server...), tc.env)
			url := base + "/state"
			if tc.gitlab {
				url = base + "/api/v4/projects/1/terraform/state"
			}
			var out strings.Builder
			args := append([]string{url, "--scratch-name", "scratch"}, tc.check...)
			err := runConformance(t.Context(), args, envFunc(map[string]string{"GITLAB_TOKEN": gitlabToken}), &out, io.Discard)
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, errCheckIncomplete)) {
				t.Fatalf("conformance: %v (want an error: %v)\n%s", err, tc.wantErr, out.String())
			}
			report := strings.ReplaceAll(out.String(), base, "http://SERVER")
			compareGolden(t, filepath.Join("testdata", "conformance", name+".txt"), report)
			if strings.Contains(report, gitlabToken) {
				t.Errorf("the report holds the token")
			}
			c := newDirectClient(t, base, nil)
			c.user, c.pass = "ci-bot", gitlabToken
			if status, body := c.do(http.MethodGet, strings.TrimPrefix(url, base)+"/scratch", nil); status != http.StatusNotFound {
				t.Errorf("GET of the scratch state after the check: %d %s, want 404", status, body)
			}
		})
	}
}

// compareGolden compares got with the golden file path, or rewrites it
// with -update.
func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the golden file (go test -run %s -update writes it): %v", t.Name(), err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("report differs from %s (-want +got):\n%s", path, diff)
	}
}

// TestConformanceTLS checks the subcommand's TLS flags against a server
// that requires a client certificate: the report is the plain server's.
func TestConformanceTLS(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	files, err := writeClientPair(t, pki)
	if err != nil {
		t.Fatal(err)
	}
	base, _, _ := runInProcess(t, []string{"--listen", "127.0.0.1:0",
		"--tls-cert", pki.serverCertFile, "--tls-key", pki.serverKeyFile, "--client-ca", pki.caFile}, nil)
	var out strings.Builder
	args := []string{base + "/state", "--scratch-name", "scratch", "--server-ca", pki.caFile, "--tls-cert", files[0], "--tls-key", files[1]}
	if err := runConformance(t.Context(), args, envFunc(nil), &out, io.Discard); err != nil {
		t.Fatalf("conformance over mutual TLS: %v\n%s", err, out.String())
	}
	report := strings.ReplaceAll(out.String(), base, "http://SERVER")
	compareGolden(t, filepath.Join("testdata", "conformance", "holder-423.txt"), report)

	err = runConformance(t.Context(), []string{base + "/state", "--server-ca", pki.caFile, "--retry-max", "0"}, envFunc(nil), io.Discard, io.Discard)
	if err == nil || errors.Is(err, errUsage) {
		t.Errorf("conformance without a client certificate: %v, want a failed request", err)
	}
}

// writeClientPair writes the test client certificate and key to files.
func writeClientPair(t *testing.T, pki *testPKI) ([2]string, error) {
	t.Helper()
	dir := t.TempDir()
	files := [2]string{filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")}
	for i, pem := range []string{pki.clientCertPEM, pki.clientKeyPEM} {
		if err := os.WriteFile(files[i], []byte(pem), 0o600); err != nil {
			return files, err
		}
	}
	return files, nil
}

// TestConformanceUsage checks the subcommand's command line errors, and
// that flags may come before or after the URL.
func TestConformanceUsage(t *testing.T) {
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		"no URL":            {args: []string{"--username", "u"}, wantErr: "takes one URL"},
		"two URLs":          {args: []string{"http://a", "http://b"}, wantErr: "takes one URL"},
		"unknown flag":      {args: []string{"http://a", "--nope"}, wantErr: "flag provided but not defined: -nope"},
		"GitLab and a lock": {args: []string{"http://a", "--gitlab", "--lock-method", "PUT"}, wantErr: "--gitlab sets the lock and unlock addresses and methods itself"},
		"scratch and URL":   {args: []string{"--use-url", "http://a", "--scratch-name", "x"}, wantErr: "--use-url and --scratch-name exclude each other"},
		"certificate alone": {args: []string{"http://a", "--tls-cert", "c.pem"}, wantErr: "--tls-cert and --tls-key must be given together"},
		"another lock address": {args: []string{"http://a", "--lock-address", "http://a/other"},
			wantErr: "a lock or unlock address without {address} would lock another state than the scratch one"},
		"zero timeout":    {args: []string{"--timeout", "0s", "http://a"}, wantErr: "--timeout must be positive"},
		"not an http URL": {args: []string{"ftp://a"}, wantErr: "address must be an http or https URL"},
		"missing CA file": {args: []string{"http://a", "--server-ca", "/nonexistent/ca.pem"}, wantErr: "reading /nonexistent/ca.pem"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := runConformance(t.Context(), tc.args, envFunc(nil), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("conformance %q = %v, want an error containing %q", tc.args, err, tc.wantErr)
			}
		})
	}
	cfg, err := parseConformance([]string{"--gitlab", "https://gl.example/api/v4/projects/7/terraform/state", "--username", "me", "--scratch-name", "s"},
		envFunc(map[string]string{"TF_HTTP_PASSWORD": "token"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	const addr = "https://gl.example/api/v4/projects/7/terraform/state/s"
	got := []string{cfg.client.Address, cfg.client.LockAddress, cfg.client.LockMethod, cfg.client.UnlockAddress, cfg.client.UnlockMethod, cfg.client.Password}
	if diff := cmp.Diff([]string{addr, addr + "/lock", "POST", addr + "/lock", "DELETE", "token"}, got); diff != "" {
		t.Errorf("GitLab addresses, methods and password (-want +got):\n%s", diff)
	}
}
