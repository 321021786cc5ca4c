package main

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// mainTF is a configuration without providers: only outputs, so terraform
// never downloads anything. %q is the state URL (address, lock and unlock).
const mainTF = `terraform {
  backend "http" {
    address        = %[1]q
    lock_address   = %[1]q
    unlock_address = %[1]q
  }
}

variable "n" {
  type    = number
  default = 1
}

output "greeting" {
  value = "hello"
}

output "number" {
  value = var.n
}

output "list" {
  value = tolist(["a", "b"])
}

output "map" {
  value = tomap({ a = "x", b = "y" })
}

output "secret" {
  value     = "s3cret"
  sensitive = true
}
`

// newWorkdir writes mainTF for stateURL in a new temporary directory where
// runner's commands run; env is added to the clean terraform environment.
func newWorkdir(t *testing.T, runner testtools.Runner, stateURL string, env ...string) *testtools.Workdir {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), fmt.Appendf(nil, mainTF, stateURL), 0o600); err != nil {
		t.Fatal(err)
	}
	return &testtools.Workdir{Bin: runner.Path, Dir: dir, Env: append(testtools.TerraformEnv(t, dir), env...)}
}

// pulledState is what the tests read of a state document.
type pulledState struct {
	Version          int               `json:"version"`
	TerraformVersion string            `json:"terraform_version"`
	Serial           int               `json:"serial"`
	Lineage          string            `json:"lineage"`
	Outputs          map[string]output `json:"outputs"`
}

type output struct {
	Value     any  `json:"value"`
	Type      any  `json:"type"`
	Sensitive bool `json:"sensitive"`
}

func parseState(t *testing.T, doc string) pulledState {
	t.Helper()
	var s pulledState
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatalf("parsing the state: %v\n%s", err, doc)
	}
	return s
}

func wantOutputs(n float64) map[string]output {
	return map[string]output{
		"greeting": {Value: "hello", Type: "string"},
		"number":   {Value: n, Type: "number"},
		"list":     {Value: []any{"a", "b"}, Type: []any{"list", "string"}},
		"map":      {Value: map[string]any{"a": "x", "b": "y"}, Type: []any{"map", "string"}},
		"secret":   {Value: "s3cret", Type: "string", Sensitive: true},
	}
}

// TestTerraformCLI drives the real terraform and tofu binaries against the
// stateserver binary: plain HTTP, basic auth, TLS and mutual TLS. It fails
// when terraform or tofu is missing; see internal/testtools.
func TestTerraformCLI(t *testing.T) {
	runners := testtools.Runners(t) // fail early, before building anything
	pki := newTestPKI(t)
	const password = "tf-password"

	cases := map[string]struct {
		serverArgs []string
		serverEnv  []string
		tfEnv      []string
		client     func(c *directClient)
		// refusals are environments terraform must fail with.
		refusals map[string]refusal
	}{
		"plain HTTP": {},
		"basic auth": {
			serverArgs: []string{"--username", "terraform"},
			serverEnv:  []string{"STATESERVER_PASSWORD=" + password},
			tfEnv:      []string{"TF_HTTP_USERNAME=terraform", "TF_HTTP_PASSWORD=" + password},
			client:     func(c *directClient) { c.user, c.pass = "terraform", password },
			refusals: map[string]refusal{
				"wrong password": {env: []string{"TF_HTTP_USERNAME=terraform", "TF_HTTP_PASSWORD=wrong"}, with: "invalid auth"},
				"no credentials": {with: "requires auth"},
			},
		},
		"TLS": {
			serverArgs: []string{"--tls-cert", pki.serverCertFile, "--tls-key", pki.serverKeyFile},
			tfEnv:      []string{"TF_HTTP_CLIENT_CA_CERTIFICATE_PEM=" + pki.caPEM},
			client:     func(c *directClient) { setTLS(c, pki.clientTLS(nil)) },
			refusals: map[string]refusal{
				"unknown CA": {env: []string{"TF_HTTP_RETRY_MAX=0"}, with: "certificate"},
			},
		},
		"mutual TLS": {
			serverArgs: []string{"--tls-cert", pki.serverCertFile, "--tls-key", pki.serverKeyFile, "--client-ca", pki.caFile},
			tfEnv: []string{
				"TF_HTTP_CLIENT_CA_CERTIFICATE_PEM=" + pki.caPEM,
				"TF_HTTP_CLIENT_CERTIFICATE_PEM=" + pki.clientCertPEM,
				"TF_HTTP_CLIENT_PRIVATE_KEY_PEM=" + pki.clientKeyPEM,
			},
			client: func(c *directClient) { setTLS(c, pki.clientTLS(&pki.clientCert)) },
			refusals: map[string]refusal{
				// With TLS 1.3 the client learns of the refusal after its side
				// of the handshake, so its error varies ("certificate
				// required", "http2: client conn could not be established",
				// ...).
				"no client certificate": {
					env: []string{"TF_HTTP_CLIENT_CA_CERTIFICATE_PEM=" + pki.caPEM, "TF_HTTP_RETRY_MAX=0"},
					log: "client didn't provide a certificate",
				},
			},
		},
	}
	for _, runner := range runners {
		version := runner.Version(t)
		for name, tc := range cases {
			t.Run(runner.Name+"/"+name, func(t *testing.T) {
				t.Parallel()
				dataDir := filepath.Join(t.TempDir(), "data")
				args := append([]string{"--listen", "127.0.0.1:0", "--data-dir", dataDir}, tc.serverArgs...)
				srv := startServerProcess(t, args, tc.serverEnv...)
				c := newDirectClient(t, srv.url, nil)
				if tc.client != nil {
					tc.client(c)
				}
				const statePath = "/state/stack-a"
				w := newWorkdir(t, runner, srv.url+statePath, tc.tfEnv...)

				exerciseTerraform(t, w, c, statePath, version)

				if _, err := os.Stat(filepath.Join(dataDir, "stack-a.tfstate")); err != nil {
					t.Errorf("state file in the data directory: %v", err)
				}
				for name, r := range tc.refusals {
					t.Run("refused: "+name, func(t *testing.T) {
						w := newWorkdir(t, runner, srv.url+"/state/stack-b", r.env...)
						out, initErr := w.Run(t, "init", "-input=false", "-no-color")
						if initErr == nil {
							var err error
							if out, err = w.Run(t, "apply", "-auto-approve", "-input=false", "-no-color"); err == nil {
								t.Fatalf("%s init and apply succeeded, want a failure:\n%s", runner.Name, out)
							}
						}
						if !strings.Contains(out, r.with) {
							t.Errorf("%s output does not mention %q:\n%s", runner.Name, r.with, out)
						}
						if !logMentions(srv.logs, r.log) {
							t.Errorf("server log does not mention %q", r.log)
						}
					})
				}
			})
		}
	}
}

// refusal is an environment terraform must fail with: its output must then
// contain with, and the server log must contain log.
type refusal struct {
	env       []string
	with, log string
}

func setTLS(c *directClient, cfg *tls.Config) {
	c.client.Transport.(*http.Transport).TLSClientConfig = cfg
}

// exerciseTerraform runs the locking scenario through the runner of w, whose
// version is version, with c holding and checking locks directly on
// statePath.
func exerciseTerraform(t *testing.T, w *testtools.Workdir, c *directClient, statePath, version string) {
	t.Helper()
	var first pulledState
	ok := t.Run("init, apply and state pull", func(t *testing.T) {
		w.MustRun(t, "init", "-input=false", "-no-color")
		w.MustRun(t, "apply", "-auto-approve", "-input=false", "-no-color")
		first = parseState(t, w.MustRun(t, "state", "pull"))
		if first.Version != 4 || first.Serial < 1 || first.Lineage == "" || first.TerraformVersion != version {
			t.Errorf("state header: version %d, serial %d, lineage %q, terraform_version %q; want 4, >= 1, set, %s",
				first.Version, first.Serial, first.Lineage, first.TerraformVersion, version)
		}
		if diff := cmp.Diff(wantOutputs(1), first.Outputs); diff != "" {
			t.Errorf("outputs (-want +got):\n%s", diff)
		}
		status, body := c.do(http.MethodGet, statePath, nil)
		if stored := parseState(t, body); status != http.StatusOK || stored.Lineage != first.Lineage || stored.Serial != first.Serial {
			t.Errorf("stored state: %d, lineage %q serial %d; want 200 with what terraform pulled", status, stored.Lineage, stored.Serial)
		}
		// terraform released its lock.
		if status, body := c.do("LOCK", statePath, lockInfo("after-apply")); status != http.StatusOK {
			t.Fatalf("LOCK after apply: %d %s, want 200", status, body)
		}
		if status, body := c.do("UNLOCK", statePath, lockInfo("after-apply")); status != http.StatusOK {
			t.Fatalf("UNLOCK: %d %s, want 200", status, body)
		}
	})
	if !ok {
		return
	}

	const holder = "7c1bd1a8-held-by-the-test"
	ok = t.Run("apply fails while another holder has the lock", func(t *testing.T) {
		if status, body := c.do("LOCK", statePath, lockInfo(holder)); status != http.StatusOK {
			t.Fatalf("LOCK: %d %s, want 200", status, body)
		}
		out, err := w.Run(t, "apply", "-auto-approve", "-input=false", "-no-color", "-var", "n=2")
		if err == nil {
			t.Fatalf("apply succeeded while the state was locked:\n%s", out)
		}
		if !strings.Contains(out, "ID="+holder) {
			t.Errorf("apply output does not quote the holder's ID %s:\n%s", holder, out)
		}
		_, body := c.do(http.MethodGet, statePath, nil)
		if got := parseState(t, body).Serial; got != first.Serial {
			t.Errorf("serial %d after the refused apply, want %d", got, first.Serial)
		}
	})
	if !ok {
		return
	}

	ok = t.Run("apply with -lock-timeout waits for the release", func(t *testing.T) {
		const wait = 2 * time.Second
		released := make(chan string, 1)
		start := time.Now()
		go func() {
			time.Sleep(wait)
			status, body, err := c.try("UNLOCK", statePath, lockInfo(holder))
			released <- fmt.Sprintf("%d %s %v", status, body, err)
		}()
		w.MustRun(t, "apply", "-auto-approve", "-input=false", "-no-color", "-lock-timeout=30s", "-var", "n=3")
		if elapsed := time.Since(start); elapsed < wait {
			t.Errorf("apply finished after %v, before the lock was released at %v", elapsed, wait)
		}
		if got := <-released; !strings.HasPrefix(got, "200 ") {
			t.Errorf("UNLOCK by the test holder: %s, want 200", got)
		}
		after := parseState(t, w.MustRun(t, "state", "pull"))
		if after.Serial <= first.Serial || after.Lineage != first.Lineage {
			t.Errorf("serial %d lineage %q after the apply, want > %d and %q", after.Serial, after.Lineage, first.Serial, first.Lineage)
		}
		if diff := cmp.Diff(wantOutputs(3), after.Outputs); diff != "" {
			t.Errorf("outputs (-want +got):\n%s", diff)
		}
	})
	if !ok {
		return
	}

	t.Run("force-unlock releases another holder's lock", func(t *testing.T) {
		const stuck = "d0e5a7f2-stuck-lock"
		if status, body := c.do("LOCK", statePath, lockInfo(stuck)); status != http.StatusOK {
			t.Fatalf("LOCK: %d %s, want 200", status, body)
		}
		out := w.MustRun(t, "force-unlock", "-force", "-no-color", stuck)
		if !strings.Contains(out, "successfully unlocked") {
			t.Errorf("force-unlock output:\n%s", out)
		}
		if status, body := c.do("LOCK", statePath, lockInfo("next")); status != http.StatusOK {
			t.Errorf("LOCK after force-unlock: %d %s, want 200", status, body)
		}
		if status, body := c.do("UNLOCK", statePath, lockInfo("next")); status != http.StatusOK {
			t.Errorf("UNLOCK: %d %s, want 200", status, body)
		}
	})
}
