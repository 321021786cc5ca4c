package controllers

import (
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/infrastate/backend-operator/controllers/internal/nslabels"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/circuit"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/netguard"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// options are the settings shared by the reconcilers, set with Option.
type options struct {
	clock clock.PassiveClock
	// stateClients, when set, builds every state client in place of the
	// default one (see stateClientsIn).
	stateClients                    stateClientFactory
	maxConcurrentReconciles         int
	maxConcurrentProbes             int
	maxConcurrentProbesPerNamespace int
	cosDefaultRegion                string
	defaultProbeInterval            time.Duration
	lockReleaseWait                 time.Duration
	referencePolicy                 ReferencePolicy
	addressPolicy                   netguard.Policy
	dial                            netguard.DialFunc
	resolver                        netguard.Resolver
	cosServiceURL                   *url.URL
	// prober is shared by the reconcilers SetupAll sets up; nil makes each
	// reconciler run its own.
	prober *probes.Pool
	// contents are shared by the reconcilers SetupAll sets up; nil makes
	// each reconciler keep its own.
	contents *related.Contents
	// related are the watches of related Secrets and ConfigMaps SetupAll
	// runs.
	related *related.Watches
	// watchNamespaces are the namespaces the manager watches; empty is
	// all.
	watchNamespaces []string
	// shard selects the objects of this API group the manager holds
	// (WithShard); nil holds all.
	shard labels.Selector
	// shardMoveGrace is how long a reference to another shard's object
	// waits before it is reported (DefaultShardMoveGrace).
	shardMoveGrace time.Duration
	// namespaceLabels are the labels of namespaces, watched where the
	// manager may (see nslabels), for the OutputGrants' selectors: the
	// watch SetupAll runs, nil before.
	namespaceLabels *nslabels.Watch
	// probeGrace is how long a reconcile waits for the first probe of a
	// generation it submitted (see reconciler.probeGrace); 0 waits not.
	probeGrace time.Duration
	// maxConcurrentDecryptions bounds the encrypted states read at once;
	// decryptions is the bound SetupAll shares (newOptions makes one when
	// it shares none).
	maxConcurrentDecryptions int
	decryptions              *decryptions
	// budgets are the budgets' settings; tenantBudgets the shares the
	// reconcilers draw from (newOptions makes them when none are shared).
	budgets       Budgets
	tenantBudgets *tenantBudgets
	// circuits pause a namespace's requests to a server that left one
	// unanswered: SetupAll's, shared by every reconciler, or (newOptions
	// makes them when none are shared) the reconciler's own.
	circuits *circuit.Breakers
	// clientDial connects the default state and COS clients, through the
	// address policy.
	clientDial netguard.DialFunc
	// tlsCache keeps the TLS material of the default state clients parsed:
	// each probe builds a client, and a backend's CA and client key
	// need not be parsed again at each.
	tlsCache *stateclient.TLSCache
	// metrics are the series the reconcilers record: SetupAll's, which it
	// registers, or (newOptions makes them when none are given) a set of
	// the reconciler's own.
	metrics *operatorMetrics
}

// Defaults of WithMaxConcurrentProbes.
const (
	// DefaultMaxConcurrentProbes bounds the probes running at once.
	DefaultMaxConcurrentProbes = 16
	// DefaultMaxConcurrentProbesPerNamespace bounds the probes of one
	// namespace running at once.
	DefaultMaxConcurrentProbesPerNamespace = 4
	// DefaultProbeInterval is the default of WithDefaultProbeInterval.
	DefaultProbeInterval = 5 * time.Minute
)

// Option configures a reconciler.
type Option func(*options)

// withClock sets the clock the reconcilers read; tests set a fake one.
func withClock(c clock.PassiveClock) Option { return func(o *options) { o.clock = c } }

// withStateClientFactory replaces how state clients are built.
func withStateClientFactory(f stateClientFactory) Option {
	return func(o *options) { o.stateClients = f }
}

// WithMaxConcurrentReconciles sets how many objects of a kind are
// reconciled at once.
func WithMaxConcurrentReconciles(n int) Option {
	return func(o *options) { o.maxConcurrentReconciles = n }
}

// WithMaxConcurrentProbes bounds the probes and state reads running at
// once, across kinds, and those of one namespace: a tenant whose servers
// hang holds at most perNamespace of them.
func WithMaxConcurrentProbes(total, perNamespace int) Option {
	return func(o *options) { o.maxConcurrentProbes, o.maxConcurrentProbesPerNamespace = total, perNamespace }
}

// WithReferencePolicy sets which Secrets and ConfigMaps a backend may
// reference; the default is ReferencePolicyNamespace.
func WithReferencePolicy(p ReferencePolicy) Option { return func(o *options) { o.referencePolicy = p } }

// WithAddressPolicy sets the addresses the default state and COS clients
// may connect to; the default is netguard.DefaultPolicy (link-local and
// cloud metadata addresses denied). Clients from withStateClientFactory
// are not affected.
func WithAddressPolicy(p netguard.Policy) Option { return func(o *options) { o.addressPolicy = p } }

// withDial sets how the default state and COS clients connect once the
// address policy has allowed an address: dial gets an IP literal and a
// port. The default is a net.Dialer. Tests use it to refuse, and report,
// every address but loopback.
func withDial(dial netguard.DialFunc) Option { return func(o *options) { o.dial = dial } }

// withResolver sets how the default state and COS clients resolve host
// names, before the address policy checks the addresses. The default is
// net.DefaultResolver. Tests use it to refuse, and report, every name but
// localhost: a lookup is already traffic.
func withResolver(r netguard.Resolver) Option { return func(o *options) { o.resolver = r } }

// WithCosServiceURL sends the requests of the default COS clients to u, a
// COS protocol server that tells buckets apart by Host header, instead of
// the real COS service (see cos.WithServiceURL). It is for tests and
// demos; nil, the default, uses the real service.
func WithCosServiceURL(u *url.URL) Option { return func(o *options) { o.cosServiceURL = u } }

// WithMaxConcurrentDecryptions bounds the encrypted states read at once,
// across kinds: each is held whole while it is decrypted (see
// statefile.Decryption), where a plain state is streamed.
func WithMaxConcurrentDecryptions(n int) Option {
	return func(o *options) { o.maxConcurrentDecryptions = n }
}

// withMetrics makes the reconcilers record m.
func withMetrics(m *operatorMetrics) Option { return func(o *options) { o.metrics = m } }

// withDecryptions shares d between reconcilers.
func withDecryptions(d *decryptions) Option { return func(o *options) { o.decryptions = d } }

// withCircuits shares c between reconcilers.
func withCircuits(c *circuit.Breakers) Option { return func(o *options) { o.circuits = c } }

// withProber shares p between reconcilers.
func withProber(p *probes.Pool) Option { return func(o *options) { o.prober = p } }

// withNamespaceLabels makes the reconcilers read the labels of namespaces
// from w, and watch their changes.
func withNamespaceLabels(w *nslabels.Watch) Option { return func(o *options) { o.namespaceLabels = w } }

// withRelated makes the reconcilers watch and read the related Secrets
// and ConfigMaps through w.
func withRelated(w *related.Watches) Option { return func(o *options) { o.related = w } }

// WithWatchNamespaces says which namespaces the manager watches (all when
// empty), as its cache does (see CacheOptions): the Secrets and
// ConfigMaps are watched there only.
func WithWatchNamespaces(namespaces []string) Option {
	return func(o *options) { o.watchNamespaces = namespaces }
}

// labeler gives the labels of namespaces as the watch of namespaces holds
// them; without the watch, every namespace's labels are unknown.
func (o options) labeler() namespaceLabeler {
	if o.namespaceLabels != nil {
		return o.namespaceLabels
	}
	return noNamespaceLabels{}
}

// watches reports whether the manager watches namespace.
func (o options) watches(namespace string) bool {
	return len(o.watchNamespaces) == 0 || slices.Contains(o.watchNamespaces, namespace)
}

// defaultProbeGrace is SetupAll's probe grace: a probe over a network is
// done well within it, a hanging one holds a worker no longer.
const defaultProbeGrace = 100 * time.Millisecond

// tlsCacheSize bounds the TLS materials (CA bundles, client certificates
// and keys) a reconciler keeps parsed: those of the backends probed
// lately; a manager whose backends use more parses each again at each
// probe, as without the cache.
const tlsCacheSize = 64

// DefaultLockReleaseWait is how long a deleted StateLock keeps trying to
// release its lock before its finalizer is removed all the same.
const DefaultLockReleaseWait = 2 * time.Minute

// WithLockReleaseWait sets how long a deleted StateLock keeps trying to
// release its lock (its backend, its Secret or its server may be gone)
// before its finalizer is removed all the same, with a Warning event
// naming the lock that may still be held.
func WithLockReleaseWait(d time.Duration) Option {
	return func(o *options) { o.lockReleaseWait = d }
}

// withProbeGrace sets how long a reconcile waits for the first probe of a
// generation it submitted; the Reconcile tests leave it at 0, to drive
// each step.
func withProbeGrace(d time.Duration) Option { return func(o *options) { o.probeGrace = d } }

// withContents makes the reconcilers share the referenced contents c.
func withContents(c *related.Contents) Option { return func(o *options) { o.contents = c } }

// WithCosDefaultRegion sets the region of CosBackends that set none.
func WithCosDefaultRegion(region string) Option {
	return func(o *options) { o.cosDefaultRegion = region }
}

// WithDefaultProbeInterval sets the probe interval of the objects whose
// spec.probe.interval is unset (see probeInterval); d must be positive.
func WithDefaultProbeInterval(d time.Duration) Option {
	return func(o *options) { o.defaultProbeInterval = d }
}

func newOptions(opts []Option) options {
	o := options{
		clock:                           clock.RealClock{},
		maxConcurrentReconciles:         1,
		maxConcurrentProbes:             DefaultMaxConcurrentProbes,
		maxConcurrentProbesPerNamespace: DefaultMaxConcurrentProbesPerNamespace,
		defaultProbeInterval:            DefaultProbeInterval,
		lockReleaseWait:                 DefaultLockReleaseWait,
		referencePolicy:                 ReferencePolicyNamespace,
		addressPolicy:                   netguard.DefaultPolicy(),
		maxConcurrentDecryptions:        DefaultMaxConcurrentDecryptions,
		budgets:                         DefaultBudgets(),
		shardMoveGrace:                  DefaultShardMoveGrace,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.decryptions == nil {
		o.decryptions = newDecryptions(o.maxConcurrentDecryptions)
	}
	if o.tenantBudgets == nil {
		o.tenantBudgets = newTenantBudgets(o.budgets, o.clock)
	}
	if o.metrics == nil {
		o.metrics = newOperatorMetrics(o.clock)
	}
	if o.circuits == nil {
		o.circuits = circuit.New(o.clock)
	}
	o.tlsCache = stateclient.NewTLSCache(tlsCacheSize)
	// The clients connect only where the address policy allows, checked on
	// the resolved address at connection time.
	o.clientDial = (&netguard.Dialer{Policy: o.addressPolicy, Resolver: o.resolver, Dial: o.dial}).DialContext
	return o
}

// stateClientsIn returns how the state clients of the objects of
// namespace are built: through the address policy and the namespace's
// circuits, unless withStateClientFactory replaced them.
func (o options) stateClientsIn(namespace string) stateClientFactory {
	if o.stateClients != nil {
		return o.stateClients
	}
	circuits := o.circuitsOf(namespace)
	return func(cfg stateclient.Config, log logr.Logger) (stateClient, error) {
		return stateclient.New(cfg, stateclient.WithLogger(log), stateclient.WithDialContext(logRefusals(log, o.clientDial)),
			stateclient.WithWrapTransport(circuits), stateclient.WithTLSCache(o.tlsCache))
	}
}

// cosClientsIn returns how the COS clients of the objects of namespace
// are built: through the address policy and the namespace's circuits, to
// the WithCosServiceURL server when one is set.
func (o options) cosClientsIn(namespace string) cosClientFactory {
	circuits := o.circuitsOf(namespace)
	return func(cfg cos.Config) (*cos.Client, error) {
		cosOpts := []cos.Option{
			cos.WithDialContext(logRefusals(ctrl.Log.WithName("cos").WithValues("bucket", cfg.Bucket), o.clientDial)),
			cos.WithWrapTransport(circuits),
		}
		if o.cosServiceURL != nil {
			cosOpts = append(cosOpts, cos.WithServiceURL(o.cosServiceURL))
		}
		return cos.New(cfg, cosOpts...)
	}
}

// circuitsOf wraps a client's transport with the circuits of namespace:
// the namespace of the object a request is made for, so that no tenant
// can pause another's requests.
func (o options) circuitsOf(namespace string) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper { return o.circuits.Transport(namespace, next) }
}

// WithShard says which objects of this API group the manager holds (all
// when nil or empty), as its cache does (see CacheOptions): an object
// that names one the selector leaves out is told so (see otherShard)
// rather than that it does not exist.
func WithShard(shard labels.Selector) Option { return func(o *options) { o.shard = shard } }

// sharded reports whether the manager holds only some of the objects of
// this API group.
func (o options) sharded() bool { return o.shard != nil && !o.shard.Empty() }

// withShardMoveGrace replaces DefaultShardMoveGrace; tests shorten it.
func withShardMoveGrace(d time.Duration) Option { return func(o *options) { o.shardMoveGrace = d } }
