package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/metricsauth"
	"github.com/infrastate/backend-operator/internal/netguard"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// defaultLeaderElectionID names the Lease the manager replicas compete for,
// unless --leader-election-id names another.
const defaultLeaderElectionID = "backend-operator.backends.infrastate.io"

// options are the manager's command-line settings.
type options struct {
	metricsAddr             string
	secureMetrics           bool
	probeAddr               string
	pprofAddr               string
	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string
	watchNamespaces         []string
	// watchLabelSelector selects the objects of the operator's kinds the
	// manager holds (its shard); nil holds all.
	watchLabelSelector              labels.Selector
	maxConcurrentReconciles         int
	maxConcurrentProbes             int
	maxConcurrentProbesPerNamespace int
	maxConcurrentDecryptions        int
	cosDefaultRegion                string
	defaultProbeInterval            time.Duration
	lockReleaseWait                 time.Duration
	budgets                         controllers.Budgets
	referencePolicy                 controllers.ReferencePolicy
	addressPolicy                   netguard.Policy
	// cosServiceURL, for tests and demos, replaces the real COS service;
	// nil when unset.
	cosServiceURL *url.URL
}

// parseOptions reads the manager's flags from args. getenv supplies the
// defaults that come from the environment (TENCENTCLOUD_REGION).
func parseOptions(fs *flag.FlagSet, args []string, getenv func(string) string) (options, error) {
	var o options
	text := textFlags{denied: netguard.PrefixList(netguard.DefaultDenied())}
	addServingFlags(fs, &o)
	addLeaderElectionFlags(fs, &o)
	addConcurrencyFlags(fs, &o)
	addBudgetFlags(fs, &o)
	addBackendDefaultFlags(fs, &o, &text, getenv)
	addAccessFlags(fs, &text)
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if err := o.resolve(text); err != nil {
		return options{}, err
	}
	if err := o.validate(); err != nil {
		return options{}, err
	}
	return o, nil
}

// textFlags are the flags read as text or lists, which resolve turns into
// options once every flag is parsed.
type textFlags struct {
	namespaces string
	selector   string
	policy     string
	cosService string
	allowed    netguard.PrefixList
	denied     netguard.PrefixList
}

// addServingFlags registers the flags of the manager's own endpoints:
// metrics, health probes and profiling.
func addServingFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", "0",
		"Address the metrics endpoint binds to, for example :8443 (secure) or :8080. 0 disables it.")
	fs.BoolVar(&o.secureMetrics, "metrics-secure", true,
		"Serve metrics over HTTPS with authentication and authorization. false serves plain HTTP.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081",
		"Address the health and readiness probes bind to.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "0",
		"Address the Go profiling endpoints (/debug/pprof/) bind to, for example 127.0.0.1:6060. 0 disables them. "+
			"Unauthenticated: bind it to loopback only.")
}

// addLeaderElectionFlags registers the flags of leader election between
// the manager's replicas.
func addLeaderElectionFlags(fs *flag.FlagSet, o *options) {
	fs.BoolVar(&o.leaderElect, "leader-elect", false,
		"Enable leader election, so that only one replica reconciles at a time.")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", defaultLeaderElectionID,
		"Name of the Lease the replicas compete for, in the manager's namespace. Two installations in one namespace need different names.")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election Lease. Empty uses the namespace the manager's Pod runs in; a manager run outside a cluster must set it.")
}

// addConcurrencyFlags registers the flags that bound how much work runs at
// the same time: reconciles, probes and state reads, decryptions.
func addConcurrencyFlags(fs *flag.FlagSet, o *options) {
	fs.IntVar(&o.maxConcurrentReconciles, "max-concurrent-reconciles", 4,
		"Maximum number of objects of one kind reconciled at the same time.")
	fs.IntVar(&o.maxConcurrentProbes, "max-concurrent-probes", controllers.DefaultMaxConcurrentProbes,
		"Maximum number of probes and state reads running at the same time, across kinds.")
	fs.IntVar(&o.maxConcurrentProbesPerNamespace, "max-concurrent-probes-per-namespace", controllers.DefaultMaxConcurrentProbesPerNamespace,
		"Maximum number of probes and state reads of one namespace running at the same time: a tenant whose servers hang holds at most this many.")
	fs.IntVar(&o.maxConcurrentDecryptions, "max-concurrent-decryptions", controllers.DefaultMaxConcurrentDecryptions,
		fmt.Sprintf("Maximum number of OpenTofu-encrypted states decrypted at the same time, across kinds, and at most one per namespace. Each is held whole "+
			"while it is decrypted, up to %d MiB as stored, where a plain state is streamed.", statefile.DefaultMaxEncryptedBytes>>20))
}

// addBudgetFlags registers the flags of the budgets: each namespace's
// share of what the manager spends for it, and the totals.
func addBudgetFlags(fs *flag.FlagSet, o *options) {
	o.budgets = controllers.DefaultBudgets()
	b := &o.budgets
	fs.Var(bytesFlag{&b.ReadMemoryPerNamespace}, controllers.ReadMemoryPerNamespaceFlag,
		"Bytes of memory (a quantity such as 16Mi) one namespace's state reads may hold: reads in flight, at their most, and results "+
			"waiting to be published. A read beyond it waits.")
	fs.Var(bytesFlag{&b.ReadMemoryTotal}, controllers.ReadMemoryTotalFlag,
		"Bytes of memory (a quantity such as 48Mi) the state reads of every namespace together may hold. Keep it well within GOMEMLIMIT.")
	fs.Var(bytesFlag{&b.APIStoragePerNamespace}, controllers.APIStoragePerNamespaceFlag,
		"Bytes (a quantity such as 64Mi) of the objects the operator writes in one namespace (rendered ConfigMaps and Secrets, "+
			"published outputs), counted as the API server counts data. A write beyond it is refused with reason BudgetExceeded.")
	fs.Var(bytesFlag{&b.APIStorageTotal}, controllers.APIStorageTotalFlag,
		"Bytes (a quantity such as 1Gi) of the objects the operator writes in every namespace together. Keep it well within etcd's quota.")
	fs.DurationVar(&b.KeyDerivationPerNamespace, controllers.KeyDerivationPerNamespaceFlag, b.KeyDerivationPerNamespace,
		"CPU time per minute that deriving the keys of one namespace's encrypted states may take. A derivation beyond it fails "+
			"with reason BudgetExceeded until the minute's use drains.")
	fs.DurationVar(&b.KeyDerivationTotal, controllers.KeyDerivationTotalFlag, b.KeyDerivationTotal,
		"CPU time per minute that deriving keys may take for every namespace together. Keep it well within the manager's CPU limit.")
}

// bytesFlag is a flag of a number of bytes, written as a quantity (64Mi,
// 1Gi, 1048576).
type bytesFlag struct{ n *int64 }

func (f bytesFlag) String() string {
	if f.n == nil {
		return ""
	}
	return resource.NewQuantity(*f.n, resource.BinarySI).String()
}

func (f bytesFlag) Set(value string) error {
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return fmt.Errorf("not a quantity of bytes such as 64Mi: %w", err)
	}
	n, ok := q.AsInt64()
	if !ok || n < 0 {
		return fmt.Errorf("%q is not a whole, positive number of bytes", value)
	}
	*f.n = n
	return nil
}

// addBackendDefaultFlags registers the flags that set what backends leave
// unset or cannot set: the probe interval, how long a StateLock tries to
// release its lock, the COS region and, for tests and demos, the COS
// service.
func addBackendDefaultFlags(fs *flag.FlagSet, o *options, text *textFlags, getenv func(string) string) {
	fs.DurationVar(&o.defaultProbeInterval, "default-probe-interval", controllers.DefaultProbeInterval,
		fmt.Sprintf("Probe interval of the backends and RemoteStates whose spec.probe.interval is unset, between %s and %s.",
			shortDuration(backendsv1alpha1.MinProbeInterval), shortDuration(backendsv1alpha1.MaxProbeInterval)))
	fs.DurationVar(&o.lockReleaseWait, "lock-release-wait", controllers.DefaultLockReleaseWait,
		"How long a deleted StateLock keeps trying to release its lock (its backend, Secret or server may be gone) before "+
			"its finalizer is removed all the same, with a Warning event naming the lock that may still be held. At least 1s.")
	fs.StringVar(&o.cosDefaultRegion, "cos-default-region", getenv("TENCENTCLOUD_REGION"),
		"Region of CosBackends that set none. Defaults to TENCENTCLOUD_REGION.")
	fs.StringVar(&text.cosService, "cos-service-url", "",
		"For tests and demos: points every CosBackend at this URL instead of the real COS service, "+
			"for example a local COS protocol double (hack/cosdouble) at http://127.0.0.1:PORT. Requests keep the bucket's "+
			"host name in their Host header and signature. Empty uses the real service.")
}

// addAccessFlags registers the flags that bound what the manager reaches:
// the namespaces it watches, the Secrets and ConfigMaps a backend may
// reference, and the addresses probes and state reads may connect to.
func addAccessFlags(fs *flag.FlagSet, text *textFlags) {
	fs.StringVar(&text.namespaces, "watch-namespaces", "",
		"Comma-separated namespaces to watch. Empty watches all namespaces.")
	fs.StringVar(&text.selector, "watch-label-selector", "",
		"Label selector of the objects of the operator's kinds this manager holds, its shard, as Flux's flag of the same name: "+
			"for example 'sharding.fluxcd.io/key in (shard1)' for a shard and '!sharding.fluxcd.io/key' for the main manager. "+
			"Empty holds every object. Run one manager per shard, each with its own --leader-election-id (docs/scaling.md).")
	fs.StringVar(&text.policy, "secret-reference-policy", string(controllers.ReferencePolicyNamespace),
		"Which Secrets and ConfigMaps a backend may reference: namespace (any of its namespace, as a Pod can) or labeled "+
			"(only those labelled "+backendsv1alpha1.AllowReferenceLabel+"=true).")
	fs.Var(&text.allowed, netguard.AllowedFlag,
		"Comma-separated CIDRs (or IPs) that probes and state reads may connect to; empty allows every address not denied.")
	fs.Var(&text.denied, netguard.DeniedFlag,
		"Comma-separated CIDRs (or IPs) that probes and state reads never connect to, checked on the resolved address. "+
			"The default denies link-local and cloud metadata addresses. Setting it replaces that list: repeat it (see config/manager) "+
			"and add, for example, the cluster's pod and service ranges.")
}

// resolve sets the options read as text from text: the address policy,
// the reference policy, the COS service URL, the shard's label selector
// and the watched namespaces,
// failing on the first that is not valid, in that order.
func (o *options) resolve(text textFlags) error {
	o.addressPolicy = netguard.Policy{Allowed: text.allowed, Denied: text.denied}
	switch p := controllers.ReferencePolicy(text.policy); p {
	case controllers.ReferencePolicyNamespace, controllers.ReferencePolicyLabeled:
		o.referencePolicy = p
	default:
		return fmt.Errorf("--secret-reference-policy must be namespace or labeled, got %q", text.policy)
	}
	var err error
	if text.cosService != "" {
		if o.cosServiceURL, err = cos.ParseServiceURL(text.cosService); err != nil {
			return fmt.Errorf("--cos-service-url: %w", err)
		}
	}
	if o.watchLabelSelector, err = parseShardSelector(text.selector); err != nil {
		return err
	}
	o.watchNamespaces, err = parseNamespaces(text.namespaces)
	return err
}

// validate checks the bounds of the numeric, duration and name settings,
// and returns the first that is out of them.
func (o options) validate() error {
	if o.maxConcurrentReconciles < 1 {
		return fmt.Errorf("--max-concurrent-reconciles must be at least 1, got %d", o.maxConcurrentReconciles)
	}
	if o.maxConcurrentProbes < 1 || o.maxConcurrentProbesPerNamespace < 1 {
		return fmt.Errorf("--max-concurrent-probes and --max-concurrent-probes-per-namespace must be at least 1, got %d and %d",
			o.maxConcurrentProbes, o.maxConcurrentProbesPerNamespace)
	}
	if err := validateLeaderElection(o.leaderElectionID, o.leaderElectionNamespace); err != nil {
		return err
	}
	if o.maxConcurrentDecryptions < 1 {
		return fmt.Errorf("--max-concurrent-decryptions must be at least 1, got %d", o.maxConcurrentDecryptions)
	}
	if o.defaultProbeInterval < backendsv1alpha1.MinProbeInterval || o.defaultProbeInterval > backendsv1alpha1.MaxProbeInterval {
		return fmt.Errorf("--default-probe-interval must be between %s and %s, as spec.probe.interval, got %s",
			shortDuration(backendsv1alpha1.MinProbeInterval), shortDuration(backendsv1alpha1.MaxProbeInterval), o.defaultProbeInterval)
	}
	if o.lockReleaseWait < time.Second {
		return fmt.Errorf("--lock-release-wait must be at least 1s, got %s", o.lockReleaseWait)
	}
	return o.budgets.Validate()
}

// validateLeaderElection checks that id is a valid Lease name and
// namespace, when set, a valid namespace name.
func validateLeaderElection(id, namespace string) error {
	if msgs := validation.IsDNS1123Subdomain(id); len(msgs) > 0 {
		return fmt.Errorf("--leader-election-id %q is not a valid Lease name: %s", id, strings.Join(msgs, "; "))
	}
	if namespace == "" {
		return nil
	}
	if msgs := validation.IsDNS1123Label(namespace); len(msgs) > 0 {
		return fmt.Errorf("--leader-election-namespace %q is not a valid namespace: %s", namespace, strings.Join(msgs, "; "))
	}
	return nil
}

// shortDuration prints d as the API's durations are written: 24h and 5m
// rather than 24h0m0s and 5m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// parseNamespaces splits a comma-separated namespace list, drops empty
// entries and duplicates, and checks that each is a valid namespace name.
func parseNamespaces(value string) ([]string, error) {
	var (
		namespaces []string
		seen       = map[string]bool{}
		errs       []error
	)
	for ns := range strings.SplitSeq(value, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--watch-namespaces: %q is not a valid namespace: %s", ns, strings.Join(msgs, "; ")))
			continue
		}
		namespaces = append(namespaces, ns)
	}
	return namespaces, errors.Join(errs...)
}

// parseShardSelector parses --watch-label-selector: nil when empty.
func parseShardSelector(value string) (labels.Selector, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	selector, err := labels.Parse(value)
	if err != nil {
		return nil, fmt.Errorf("--watch-label-selector: %w", err)
	}
	return selector, nil
}

// managerOptions turns the settings into controller-runtime options. Secrets
// and ConfigMaps are never cached (see controllers.ClientOptions).
func managerOptions(o options) ctrl.Options {
	metrics := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.secureMetrics}
	if o.secureMetrics {
		metrics.FilterProvider = metricsauth.FilterProvider
	}

	return ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metrics,
		HealthProbeBindAddress: o.probeAddr,
		PprofBindAddress:       o.pprofAddr,
		LeaderElection:         o.leaderElect,
		LeaderElectionID:       o.leaderElectionID,
		// Empty: controller-runtime reads the Pod's namespace.
		LeaderElectionNamespace: o.leaderElectionNamespace,
		// The manager exits right after it stops reconciling, so releasing
		// the Lease early is safe and lets a new leader start at once.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         controllers.CacheOptions(o.watchNamespaces, o.watchLabelSelector),
		Client:                        controllers.ClientOptions(),
	}
}

// addHealthChecks registers the liveness and readiness checks.
func addHealthChecks(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding readiness check: %w", err)
	}
	return nil
}
