package render

import (
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/utils/ptr"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateserver"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// statePath is where the runs keep their state on the reference server.
const statePath = "/state/app"

// serverTLS is how the reference server serves.
type serverTLS int

const (
	plainHTTP  serverTLS = iota
	serverOnly           // TLS with httptest's certificate
	mutualTLS            // TLS, and a client certificate is required
)

// seen records what the reference server received.
type seen struct {
	mu       sync.Mutex
	requests []string      // "METHOD path?query"
	users    []string      // basic auth usernames
	headers  []http.Header // each request's headers
}

func (s *seen) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		req := r.Method + " " + r.URL.Path
		if r.URL.RawQuery != "" {
			req += "?" + r.URL.RawQuery
		}
		s.requests = append(s.requests, req)
		if user, _, ok := r.BasicAuth(); ok {
			s.users = append(s.users, user)
		}
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// TestTerraformHTTP renders HttpBackends for terraform and for tofu
// (spec.runner), gives the files and credentials to that CLI as a runner
// pod would, in each of the three layouts, and checks that `init` and `apply` store the state on the
// reference server with exactly the rendered settings. It fails, never
// skips, when terraform or tofu is missing; see internal/testtools.
func TestTerraformHTTP(t *testing.T) {
	runners := testtools.Runners(t) // fail early
	client := newClientCert(t)
	const password = "pa:ss \"word\" ${x}\n"

	cases := map[string]struct {
		tls     serverTLS
		user    string // the server requires basic auth with user and password when set
		spec    func(address string) backendsv1alpha1.HttpBackendSpec
		secrets HTTPSecrets
		// wantRequests must all have been received by the server.
		wantRequests []string
	}{
		"minimal": {
			spec:         func(a string) backendsv1alpha1.HttpBackendSpec { return backendsv1alpha1.HttpBackendSpec{Address: a} },
			wantRequests: []string{"GET " + statePath, "POST " + statePath},
		},
		"basic auth": {
			user: "terraform",
			spec: func(a string) backendsv1alpha1.HttpBackendSpec {
				return backendsv1alpha1.HttpBackendSpec{Address: a, Username: "terraform", PasswordSecretRef: &backendsv1alpha1.SecretKeyRef{Name: "pw"}}
			},
			secrets:      HTTPSecrets{Password: []byte(password)},
			wantRequests: []string{"POST " + statePath},
		},
		"escaping-heavy username and address": {
			user: escapingString,
			spec: func(a string) backendsv1alpha1.HttpBackendSpec {
				return backendsv1alpha1.HttpBackendSpec{Address: a + "?a=${x}&b=$${y}&c=%%7B", Username: escapingString}
			},
			secrets:      HTTPSecrets{Password: []byte(password)},
			wantRequests: []string{"GET " + statePath + "?a=${x}&b=$${y}&c=%%7B"},
		},
		"every http field": {
			tls:  serverOnly,
			user: "terraform",
			spec: func(a string) backendsv1alpha1.HttpBackendSpec {
				return backendsv1alpha1.HttpBackendSpec{
					Address:              a,
					UpdateMethod:         "PUT",
					LockAddress:          a + "/lock",
					LockMethod:           "POST",
					UnlockAddress:        a + "/lock",
					UnlockMethod:         "DELETE",
					Username:             "terraform",
					PasswordSecretRef:    &backendsv1alpha1.SecretKeyRef{Name: "pw"},
					SkipCertVerification: true,
					RetryMax:             ptr.To[int32](3),
					RetryWaitMin:         ptr.To[int32](2),
					RetryWaitMax:         ptr.To[int32](5),
					Overrides:            []backendsv1alpha1.Override{overrideJSON("retry_max", `4`)},
				}
			},
			secrets:      HTTPSecrets{Password: []byte(password)},
			wantRequests: []string{"POST " + statePath + "/lock", "PUT " + statePath, "DELETE " + statePath + "/lock"},
		},
		"mutual TLS with the default lock methods": {
			tls: mutualTLS,
			spec: func(a string) backendsv1alpha1.HttpBackendSpec {
				return backendsv1alpha1.HttpBackendSpec{
					Address: a, LockAddress: a, UnlockAddress: a,
					UpdateMethod: "POST", LockMethod: "LOCK", UnlockMethod: "UNLOCK", // the API server's defaults
					TLS: &backendsv1alpha1.HttpBackendTLS{ClientCertificateSecretRef: &backendsv1alpha1.LocalSecretRef{Name: "tls"}},
				}
			},
			secrets: HTTPSecrets{ClientCertificatePEM: client.certPEM, ClientPrivateKeyPEM: client.keyPEM},
			// ClientCACertificatePEM is set below, from the server's certificate.
			wantRequests: []string{"LOCK " + statePath, "POST " + statePath, "UNLOCK " + statePath},
		},
	}
	for _, runner := range runners {
		for name, tc := range cases {
			for layoutName, l := range layouts {
				t.Run(runner.Name+"/"+name+"/"+layoutName, func(t *testing.T) {
					t.Parallel()
					store := stateserver.NewMemoryStore()
					var opts []stateserver.Option
					if tc.user != "" {
						opts = append(opts, stateserver.WithBasicAuth(tc.user, password))
					}
					var rec seen
					srv := httptest.NewUnstartedServer(rec.wrap(stateserver.New(store, opts...)))
					secrets := tc.secrets
					switch tc.tls {
					case plainHTTP:
						srv.Start()
					case serverOnly:
						srv.StartTLS()
					case mutualTLS:
						srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: client.pool}
						srv.StartTLS()
						secrets.ClientCACertificatePEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
					}
					t.Cleanup(srv.Close)

					spec := tc.spec(srv.URL + statePath)
					spec.Runner = &backendsv1alpha1.Runner{Flavor: backendsv1alpha1.RunnerFlavor(runner.Flavor)}
					files, err := HTTPFiles(spec)
					if err != nil {
						t.Fatal(err)
					}
					w := newWorkdir(t, runner, l.files(files, "http"), HTTPCredentials(secrets))
					w.MustRun(t, append([]string{"init", "-input=false", "-no-color"}, l.initArgs...)...)
					w.MustRun(t, "apply", "-auto-approve", "-input=false", "-no-color")

					checkStoredState(t, srv, tc.tls == mutualTLS, client.tls, spec, password)
					rec.mu.Lock()
					defer rec.mu.Unlock()
					for _, want := range tc.wantRequests {
						// A request matches with or without its query (updates
						// carry ?ID=<lock id> while the lock is held).
						if !slices.ContainsFunc(rec.requests, func(r string) bool { return r == want || strings.SplitN(r, "?", 2)[0] == want }) {
							t.Errorf("the server did not receive %q; it received %q", want, rec.requests)
						}
					}
					if tc.user != "" {
						if len(rec.users) == 0 {
							t.Errorf("%s sent no basic auth", runner.Name)
						}
						for _, u := range rec.users {
							if u != tc.user {
								t.Errorf("the server received username %q, want %q", u, tc.user)
							}
						}
					}
					if r, err := store.Load("app"); err != nil || r.Lock != nil {
						t.Errorf("lock after apply: %q, %v; want released", r.Lock, err)
					}
				})
			}
		}
	}
}

// checkStoredState GETs the state at spec.Address, as the reference server
// holds it, and checks that it has the applied output.
func checkStoredState(t *testing.T, srv *httptest.Server, withClientCert bool, cert tls.Certificate, spec backendsv1alpha1.HttpBackendSpec, password string) {
	t.Helper()
	c := srv.Client()
	if withClientCert {
		c.Transport.(*http.Transport).TLSClientConfig.Certificates = []tls.Certificate{cert}
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, spec.Address, http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Username != "" {
		req.SetBasicAuth(spec.Username, password)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the state: %d %v\n%s", resp.StatusCode, err, body)
	}
	var state struct {
		Lineage string `json:"lineage"`
		Outputs map[string]struct {
			Value any `json:"value"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(body, &state); err != nil {
		t.Fatalf("parsing the stored state: %v\n%s", err, body)
	}
	if state.Lineage == "" || state.Outputs["x"].Value != "y" {
		t.Errorf("stored state has lineage %q and outputs %v, want a lineage and x = \"y\"", state.Lineage, state.Outputs)
	}
}
