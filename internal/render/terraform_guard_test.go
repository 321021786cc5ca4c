package render

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// The terraform tests of this package must send traffic to loopback
// addresses only. Every terraform command runs in a workdir made by
// newWorkdir, whose environment sends every request for a non-loopback
// host to a refusingProxy of its own: Go's proxy selection (which
// terraform, its http backend and the Tencent Cloud SDK use) never proxies
// loopback addresses and proxies everything else when HTTP_PROXY and
// HTTPS_PROXY are set and NO_PROXY is not. The proxy answers every request
// itself, so a configuration that makes terraform call a cloud service
// (COS, STS) shows which host it asked for without reaching it.

// refusingProxy is an HTTP proxy that refuses every request, CONNECT or
// not, after recording the method and the host asked for. It never dials
// anywhere: it lets terraform get past reading and checking the backend
// configuration, and shows which endpoint it then contacts, without any
// network access.
type refusingProxy struct {
	mu    sync.Mutex
	hosts []string // "METHOD host", in arrival order
}

func (p *refusingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.hosts = append(p.hosts, r.Method+" "+r.Host)
	p.mu.Unlock()
	http.Error(w, "refused by the test proxy", http.StatusForbidden)
}

// requests returns what the proxy was asked for so far.
func (p *refusingProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.hosts)
}

// startRefusingProxy starts a refusingProxy on a loopback address for the
// duration of the test and returns it with its URL.
func startRefusingProxy(t *testing.T) (*refusingProxy, string) {
	t.Helper()
	p := &refusingProxy{}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

// proxyEnv is the environment that sends every non-loopback request of a
// terraform command to the proxy at proxyURL. NO_PROXY is set empty, so
// that no host is exempt but the loopback ones Go never proxies.
func proxyEnv(proxyURL string) []string {
	return []string{"HTTPS_PROXY=" + proxyURL, "HTTP_PROXY=" + proxyURL, "NO_PROXY="}
}

// isProxyVariable reports whether the environment entry kv sets a variable
// that decides proxying: such variables come only from proxyEnv.
func isProxyVariable(kv string) bool {
	name, _, _ := strings.Cut(kv, "=")
	switch strings.ToUpper(name) {
	case "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "ALL_PROXY", "REQUEST_METHOD":
		return true
	}
	return false
}

// TestRefusingProxyNeverForwards asks the proxy, as Go's HTTP clients do,
// for a tunnel (CONNECT, for https) and for a plain request (for http) to a
// live loopback server: the proxy records and refuses both, and the server
// accepts no connection.
func TestRefusingProxyNeverForwards(t *testing.T) {
	var mu sync.Mutex
	accepted := 0
	upstream := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	upstream.Listener = countingListener{Listener: upstream.Listener, count: func() {
		mu.Lock()
		accepted++
		mu.Unlock()
	}}
	upstream.Start()
	t.Cleanup(upstream.Close)
	target := strings.TrimPrefix(upstream.URL, "http://")

	proxy, proxyURL := startRefusingProxy(t)
	u, err := url.Parse(proxyURL)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(u)}}

	// https: the client asks for a tunnel, which the proxy refuses.
	if resp, err := client.Do(getRequest(t, "https://"+target+"/state")); err == nil {
		resp.Body.Close()
		t.Errorf("a request through the CONNECT tunnel got an answer (%d), want the tunnel refused", resp.StatusCode)
	}
	// http: the client sends the request to the proxy, which answers it.
	resp, err := client.Do(getRequest(t, "http://"+target+"/state"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a plain request through the proxy answered %d, want %d", resp.StatusCode, http.StatusForbidden)
	}

	if got, want := proxy.requests(), []string{"CONNECT " + target, "GET " + target}; !slices.Equal(got, want) {
		t.Errorf("the proxy recorded %q, want %q", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if accepted > 0 {
		t.Errorf("the upstream server accepted %d connections through the proxy, want none", accepted)
	}
}

// countingListener calls count for every connection it accepts.
type countingListener struct {
	net.Listener
	count func()
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.count()
	}
	return c, err
}

// TestTerraformRunsAreGuarded checks that the terraform commands of this
// package's tests can only run in a workdir made by newWorkdir: no test
// file but terraform_helpers_test.go builds a testtools.Workdir, starts a
// process, or sets a proxy variable.
func TestTerraformRunsAreGuarded(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if sel, ok := n.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Workdir" && name != "terraform_helpers_test.go" {
					t.Errorf("%s builds a testtools.Workdir: make workdirs with newWorkdir, which confines terraform to loopback", fset.Position(n.Pos()))
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && (x.Name == "exec" || x.Name == "os" && n.Sel.Name == "StartProcess") {
					t.Errorf("%s starts a process: run terraform through newWorkdir, which confines it to loopback", fset.Position(n.Pos()))
				}
			case *ast.BasicLit:
				if n.Kind == token.STRING && name != "terraform_guard_test.go" && strings.Contains(strings.ToUpper(n.Value), "_PROXY") {
					t.Errorf("%s names a proxy variable: newWorkdir alone sets them", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
}

// TestNewWorkdirConfinesTerraform checks the environment of a workdir (the
// proxy variables Go reads point at a loopback proxy, and nothing exempts
// a host from it), then that terraform run in one sends its requests for a
// non-loopback state server, over https and http, to that proxy alone.
func TestNewWorkdirConfinesTerraform(t *testing.T) {
	runners := testtools.Runners(t)
	w := newWorkdir(t, runners[0], nil, map[string][]byte{"TF_HTTP_PASSWORD": []byte("x")})
	env := map[string]string{}
	for _, kv := range w.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v // the last value wins, as in os/exec
	}
	for _, name := range []string{"HTTPS_PROXY", "HTTP_PROXY"} {
		u, err := url.Parse(env[name])
		if err != nil || u.Scheme != "http" || !isLoopback(u.Hostname()) {
			t.Errorf("%s = %q, want the URL of a loopback proxy", name, env[name])
		}
	}
	for _, name := range []string{"NO_PROXY", "no_proxy", "https_proxy", "http_proxy", "REQUEST_METHOD"} {
		if v := env[name]; v != "" {
			t.Errorf("%s = %q, want it unset or empty", name, v)
		}
	}

	for _, runner := range runners {
		for _, address := range []string{"https://state.example.com/state/app", "http://state.example.com:8080/state/app"} {
			t.Run(runner.Name+"/"+address, func(t *testing.T) {
				t.Parallel()
				files, err := HTTPFiles(backendsv1alpha1.HttpBackendSpec{Address: address, RetryMax: ptr.To[int32](0)})
				if err != nil {
					t.Fatal(err)
				}
				w := newWorkdir(t, runner, layouts[BackendTFKey].files(files, "http"), nil)
				out, err := w.Run(t, "init", "-input=false", "-no-color")
				if err == nil {
					t.Fatalf("%s init succeeded through a refusing proxy:\n%s", runner.Name, out)
				}
				u, _ := url.Parse(address)
				want := "CONNECT state.example.com:443"
				if u.Scheme == "http" {
					want = "GET " + u.Host
				}
				if got := w.proxy.requests(); !slices.Contains(got, want) {
					t.Errorf("the proxy saw %q, want %q; output:\n%s", got, want, out)
				}
			})
		}
	}
}

// getRequest returns a GET request for target, bound to the test's context.
func getRequest(t *testing.T, target string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, target, http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// isLoopback reports whether host is a loopback IP address.
func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
