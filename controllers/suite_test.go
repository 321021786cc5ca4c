package controllers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/infrastate/backend-operator/internal/cos/costest"
	"github.com/infrastate/backend-operator/internal/stateserver"
	"github.com/infrastate/backend-operator/internal/testenv"
)

// Shared timeouts of the suite.
const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)

// Credentials of the suite's state servers.
const (
	stateUser     = "runner"
	statePassword = "s3cret-Pa55word-value"
	cosSecretID   = "AKIDinfrastateTestKey0001"
	cosSecretKey  = "cos-secret-key-value-0001"
)

var (
	testEnv   *envtest.Environment
	cfg       *rest.Config
	k8sClient client.Client

	// stateServer speaks the REST state protocol over plain HTTP with basic
	// auth; tlsStateServer over mutual TLS, with certs from suiteCerts.
	stateServer, tlsStateServer     *stateserver.Server
	stateHTTPServer, stateTLSServer *httptest.Server
	suiteCerts                      *testCertificates

	// cosServer stands in for Tencent Cloud COS, checking request
	// signatures; the reconcilers reach it through WithCosServiceURL.
	cosServer *costest.Server
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controllers suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))

	var err error
	testEnv, err = testenv.New()
	Expect(err).NotTo(HaveOccurred())
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	Expect(err).NotTo(HaveOccurred())

	stateServer = stateserver.New(stateserver.NewMemoryStore(), stateserver.WithBasicAuth(stateUser, statePassword))
	stateHTTPServer = httptest.NewServer(stateServer)

	suiteCerts = newTestCertificates()
	tlsStateServer = stateserver.New(stateserver.NewMemoryStore())
	stateTLSServer = httptest.NewUnstartedServer(tlsStateServer)
	stateTLSServer.TLS = suiteCerts.serverTLSConfig()
	stateTLSServer.StartTLS()

	cosServer = costest.NewServer(nil)
	cosServer.AddCredentials(cosSecretID, cosSecretKey)
})

var _ = AfterSuite(func() {
	if stateHTTPServer != nil {
		stateHTTPServer.Close()
	}
	if stateTLSServer != nil {
		stateTLSServer.Close()
	}
	if cosServer != nil {
		cosServer.Close()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// writeCounter counts the writes a manager sends to the API server, and
// records its reads.
type writeCounter struct {
	mu     sync.Mutex
	writes []string
	reads  []apiRead
	// stop stops the manager before the spec ends.
	stop func()
	// answer, when set, may answer a request in place of the API server:
	// a nil response lets it through.
	answer func(*http.Request) *http.Response
}

// answerWith makes f answer the manager's requests in place of the API
// server when it returns a response.
func (w *writeCounter) answerWith(f func(*http.Request) *http.Response) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answer = f
}

// apiRead is one GET the manager sent.
type apiRead struct {
	// path and query of the request; accept is its Accept header, which
	// asks for metadata only (as=PartialObjectMetadata) or whole objects.
	path, query, accept string
}

func (w *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		w.mu.Lock()
		if req.Method != http.MethodGet {
			w.writes = append(w.writes, req.Method+" "+req.URL.Path)
		} else {
			w.reads = append(w.reads, apiRead{path: req.URL.Path, query: req.URL.RawQuery, accept: req.Header.Get("Accept")})
		}
		answer := w.answer
		w.mu.Unlock()
		if answer != nil {
			if resp := answer(req); resp != nil {
				return resp, nil
			}
		}
		return rt.RoundTrip(req)
	})
}

// readsOf returns the GETs of path.
func (w *writeCounter) readsOf(path string) []apiRead {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []apiRead
	for _, r := range w.reads {
		if r.path == path {
			out = append(out, r)
		}
	}
	return out
}

// since returns the writes recorded after the first n.
func (w *writeCounter) since(n int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes[n:]...)
}

func (w *writeCounter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.writes)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// startManager runs a fresh manager with every reconciler for the current
// spec, watching only its namespace, and stops it when the spec ends. It
// returns the counter of the manager's writes.
func startManager(ctx context.Context, namespace string, opts ...Option) *writeCounter {
	return startManagerFor(ctx, []string{namespace}, opts...)
}

// startManagerFor is startManager watching several namespaces.
func startManagerFor(ctx context.Context, namespaces []string, opts ...Option) *writeCounter {
	return startManagerLogging(ctx, namespaces, logr.Logger{}, opts...)
}

// startManagerLogging is startManagerFor with the manager's logs going to
// log (the suite's logger when log is the zero Logger).
func startManagerLogging(ctx context.Context, namespaces []string, log logr.Logger, opts ...Option) *writeCounter {
	counter := &writeCounter{}
	mgrCfg := rest.CopyConfig(cfg)
	mgrCfg.Wrap(counter.wrap)

	skip := true
	mgr, err := ctrl.NewManager(mgrCfg, ctrl.Options{
		Scheme:     testenv.Scheme(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: &skip},
		Cache:      CacheOptions(namespaces, newOptions(opts).shard),
		Client:     ClientOptions(),
		Logger:     log,
	})
	Expect(err).NotTo(HaveOccurred())

	// The manager's clients are built as in production, through the
	// address policy, with the COS requests sent to the suite's COS server,
	// and a resolver and a final dial that refuse, and report when the spec
	// ends, anything but localhost and loopback.
	guard := &loopbackOnly{}
	DeferCleanup(func() {
		Expect(guard.attempts()).To(BeEmpty(), "the manager tried to reach names or addresses other than loopback")
	})
	opts = append([]Option{WithWatchNamespaces(namespaces), WithCosServiceURL(cosServer.ServiceURL()), withResolver(guard), withDial(guard.DialContext)}, opts...)
	Expect(SetupAll(ctx, mgr, opts...)).To(Succeed())

	// The manager runs until stop, not until ctx ends: stop cancels it and
	// waits for it to return.
	mgrCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(mgrCtx)).To(Succeed())
	}()
	counter.stop = func() {
		cancel()
		Eventually(done, timeout).Should(BeClosed())
	}
	DeferCleanup(counter.stop)
	return counter
}

// specTimeout bounds one spec.
const specTimeout = 2 * time.Minute

// newSpec gives the current spec a context, bounded by specTimeout and
// cancelled when the spec ends, and a namespace of its own.
func newSpec() (context.Context, string) {
	ctx, cancel := context.WithTimeout(context.Background(), specTimeout)
	DeferCleanup(cancel)
	return ctx, newNamespace(ctx)
}

// specEnv is what each spec of a container works in, filled afresh before
// every spec by eachSpec or eachSpecWithManager.
type specEnv struct {
	// ctx is bounded by specTimeout and cancelled when the spec ends.
	ctx context.Context //nolint:containedctx // filled before each spec by a BeforeEach, the Ginkgo form of a per-spec context
	// ns is the spec's own namespace.
	ns string
	// writes counts the writes, and records the reads, of the spec's
	// manager; nil when eachSpec started none.
	writes *writeCounter
}

// eachSpec gives every spec of the calling container a context and a
// namespace of its own (see newSpec). Call it in the container's body.
func eachSpec() *specEnv {
	env := &specEnv{}
	BeforeEach(func() {
		*env = specEnv{}
		env.ctx, env.ns = newSpec()
	})
	return env
}

// eachSpecWithManager is eachSpec with a fresh manager, started with opts
// and watching the spec's namespace, for every spec.
func eachSpecWithManager(opts ...Option) *specEnv {
	env := eachSpec()
	BeforeEach(func() {
		env.writes = startManager(env.ctx, env.ns, opts...)
	})
	return env
}

// createPassword creates the Secret "state-password" holding the suite
// state server's password.
func createPassword(ctx context.Context, ns string) {
	GinkgoHelper()
	create(ctx, suitePassword(ns))
}

// newNamespace gives the current spec a namespace of its own.
func newNamespace(ctx context.Context) string {
	ns, err := testenv.CreateNamespace(ctx, k8sClient, "ctrl")
	Expect(err).NotTo(HaveOccurred())
	return ns
}
