// Command manager runs the backend-operator controllers.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/go-logr/logr"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers"
	"github.com/infrastate/backend-operator/internal/logging"
	"github.com/infrastate/backend-operator/internal/netguard"
)

// scheme holds the built-in kinds and the backends.infrastate.io kinds.
var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(backendsv1alpha1.AddToScheme(scheme))
}

func main() {
	if percent, ok := gcPercent(os.Getenv); ok {
		debug.SetGCPercent(percent)
	}
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine)
	opts, err := parseOptions(flag.CommandLine, os.Args[1:], os.Getenv)
	if err != nil {
		// No logger yet: the flags that configure it may be the wrong ones.
		fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		os.Exit(2)
	}
	log := setUpLogging(zapOpts).WithName("setup")
	if err := run(opts, log); err != nil {
		log.Error(err, "The manager stopped")
		os.Exit(1)
	}
}

// setUpLogging makes one structured logger, bounded in verbosity, and
// sends every logger of the process to it: controller-runtime's,
// client-go's klog (leader election, watches, warnings) and the standard
// library's log and log/slog (net/http's server errors), so that every
// line the manager writes is JSON. Bounded: client-go logs request
// headers and bodies at high verbosity, Secrets and the manager's token
// included.
func setUpLogging(zapOpts zap.Options) logr.Logger {
	logger := logging.Bounded(zap.New(zap.UseFlagOptions(&zapOpts)), logging.MaxVerbosity)
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	// Also the default of the log package, whose output slog takes over.
	slog.SetDefault(slog.New(logr.ToSlogHandler(logger)))
	return logger
}

// run starts the manager with opts and runs it until a signal stops it.
func run(opts options, log logr.Logger) error {
	ctx := ctrl.SetupSignalHandler()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, managerOptions(opts))
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := addHealthChecks(mgr); err != nil {
		return err
	}
	if err := setupControllers(ctx, mgr, opts); err != nil {
		return err
	}

	log.Info("Starting manager", "watchNamespaces", opts.watchNamespaces, "watchLabelSelector", selectorText(opts.watchLabelSelector),
		"leaderElection", opts.leaderElect, "leaderElectionID", opts.leaderElectionID,
		"defaultProbeInterval", shortDuration(opts.defaultProbeInterval),
		"secretReferencePolicy", opts.referencePolicy, "deniedAddresses", netguard.FormatPrefixes(opts.addressPolicy.Denied),
		"allowedAddresses", netguard.FormatPrefixes(opts.addressPolicy.Allowed))
	if opts.cosServiceURL != nil {
		log.Info("Sending every COS request to a COS service other than Tencent Cloud's: for tests and demos only",
			"cosServiceURL", opts.cosServiceURL.String())
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// selectorText prints a shard's selector in the log: empty for none.
func selectorText(selector labels.Selector) string {
	if selector == nil {
		return ""
	}
	return selector.String()
}

// setupControllers registers every reconciler with the manager.
func setupControllers(ctx context.Context, mgr ctrl.Manager, opts options) error {
	return controllers.SetupAll(ctx, mgr,
		controllers.WithWatchNamespaces(opts.watchNamespaces),
		controllers.WithShard(opts.watchLabelSelector),
		controllers.WithMaxConcurrentReconciles(opts.maxConcurrentReconciles),
		controllers.WithMaxConcurrentProbes(opts.maxConcurrentProbes, opts.maxConcurrentProbesPerNamespace),
		controllers.WithMaxConcurrentDecryptions(opts.maxConcurrentDecryptions),
		controllers.WithCosDefaultRegion(opts.cosDefaultRegion),
		controllers.WithDefaultProbeInterval(opts.defaultProbeInterval),
		controllers.WithLockReleaseWait(opts.lockReleaseWait),
		controllers.WithBudgets(opts.budgets),
		controllers.WithReferencePolicy(opts.referencePolicy),
		controllers.WithAddressPolicy(opts.addressPolicy),
		controllers.WithCosServiceURL(opts.cosServiceURL),
	)
}
