package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsfilters "sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/infrastate/backend-operator/controllers"
)

// leaderElectionID names the Lease the manager replicas compete for.
const leaderElectionID = "backend-operator.backends.infrastate.io"

// options are the manager's command-line settings.
type options struct {
	metricsAddr             string
	secureMetrics           bool
	probeAddr               string
	leaderElect             bool
	watchNamespaces         []string
	maxConcurrentReconciles int
	cosDefaultRegion        string
}

// parseOptions reads the manager's flags from args. getenv supplies the
// defaults that come from the environment (TENCENTCLOUD_REGION).
func parseOptions(fs *flag.FlagSet, args []string, getenv func(string) string) (options, error) {
	var (
		o          options
		namespaces string
	)
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", "0",
		"Address the metrics endpoint binds to, for example :8443 (secure) or :8080. 0 disables it.")
	fs.BoolVar(&o.secureMetrics, "metrics-secure", true,
		"Serve metrics over HTTPS with authentication and authorization. false serves plain HTTP.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081",
		"Address the health and readiness probes bind to.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false,
		"Enable leader election, so that only one replica reconciles at a time.")
	fs.StringVar(&namespaces, "watch-namespaces", "",
		"Comma-separated namespaces to watch. Empty watches all namespaces.")
	fs.IntVar(&o.maxConcurrentReconciles, "max-concurrent-reconciles", 4,
		"Maximum number of objects of one kind reconciled at the same time.")
	fs.StringVar(&o.cosDefaultRegion, "cos-default-region", getenv("TENCENTCLOUD_REGION"),
		"Region of CosBackends that set none. Defaults to TENCENTCLOUD_REGION.")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}

	var err error
	if o.watchNamespaces, err = parseNamespaces(namespaces); err != nil {
		return options{}, err
	}
	if o.maxConcurrentReconciles < 1 {
		return options{}, fmt.Errorf("--max-concurrent-reconciles must be at least 1, got %d", o.maxConcurrentReconciles)
	}
	return o, nil
}

// parseNamespaces splits a comma-separated namespace list, drops empty
// entries and duplicates, and checks that each is a valid namespace name.
func parseNamespaces(value string) ([]string, error) {
	var (
		namespaces []string
		seen       = map[string]bool{}
		errs       []error
	)
	for _, ns := range strings.Split(value, ",") {
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

// managerOptions turns the settings into controller-runtime options. Secrets
// and ConfigMaps are never cached (see controllers.ClientOptions).
func managerOptions(o options) ctrl.Options {
	metrics := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.secureMetrics}
	if o.secureMetrics {
		metrics.FilterProvider = metricsfilters.WithAuthenticationAndAuthorization
	}

	return ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metrics,
		HealthProbeBindAddress: o.probeAddr,
		LeaderElection:         o.leaderElect,
		LeaderElectionID:       leaderElectionID,
		// The manager exits right after it stops reconciling, so releasing
		// the Lease early is safe and lets a new leader start at once.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         controllers.CacheOptions(o.watchNamespaces),
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
