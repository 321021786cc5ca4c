package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// Scenario names, in the order they run.
const (
	scenarioFloorBurst     = "floor-burst"
	scenarioBurst          = "burst"
	scenarioAtRest         = "at-rest"
	scenarioRestartSigterm = "restart-sigterm"
	scenarioRestartSigkill = "restart-sigkill"
	scenarioFloorCold      = "floor-cold"
	scenarioColdStart      = "cold-start"
	scenarioMemory         = "memory"
	scenarioKillBurst      = "kill-burst"
	scenarioApplyLatency   = "apply-latency"
	// scenarioShards runs two sharded managers instead of the one; its
	// rows are named after its phases (see shardsScenario).
	scenarioShards = "shards"
)

// allScenarios lists every scenario in the order they run: the ones that
// time something first, then memory, whose unrelated objects stay, then
// the crash check and the latency of single creates with everything
// present, and last the two shards, which replace the one manager.
var allScenarios = []string{
	scenarioFloorBurst, scenarioBurst, scenarioAtRest, scenarioRestartSigterm, scenarioRestartSigkill,
	scenarioFloorCold, scenarioColdStart, scenarioMemory, scenarioKillBurst, scenarioApplyLatency, scenarioShards,
}

// options are the harness's command-line settings.
type options struct {
	// n is the number of backends of the burst and cold scenarios.
	n int
	// perNamespace is the number of backends in each namespace.
	perNamespace int
	// workers is the number of concurrent creators of the harness.
	workers int
	// concurrency is the manager's --max-concurrent-reconciles and the
	// floor's number of workers.
	concurrency int
	// probeInterval is the manager's --default-probe-interval.
	probeInterval time.Duration
	// scenarios are the scenarios to run, in allScenarios order.
	scenarios []string
	// unrelatedSecrets and unrelatedConfigMaps are the objects the memory
	// scenario creates in namespaces of their own.
	unrelatedSecrets, unrelatedConfigMaps int
	// killN is the number of backends of kill-burst.
	killN int
	// latencySamples is the number of single creates of apply-latency.
	latencySamples int
	// shardRelabel is the number of backends (and StateLocks) the shards
	// scenario moves from shard a to shard b; at most shard a's backends.
	shardRelabel int
	// settle is how long restart-* and memory wait after the resync
	// before reading RSS.
	settle time.Duration
	// pprofDir, when set, receives the manager's profiles of the burst.
	pprofDir string
	// pprofSeconds is the length of the burst's CPU profile.
	pprofSeconds int
	// timeout bounds each wait for backends to become Ready or a resync
	// to end; 0 derives it from the number of backends.
	timeout time.Duration
	// logDir, when set, keeps the manager's and the state server's logs
	// there instead of in a temporary directory removed at the end.
	logDir string
}

// parseOptions reads the harness's flags from args.
func parseOptions(args []string, stderr io.Writer) (options, error) {
	var (
		o         options
		scenarios string
	)
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.n, "n", 1000, "number of backends of the burst and cold scenarios")
	fs.IntVar(&o.perNamespace, "per-namespace", 100, "backends per namespace")
	fs.IntVar(&o.workers, "workers", 8, "concurrent creators of the harness")
	fs.IntVar(&o.concurrency, "max-concurrent-reconciles", 4, "the manager's --max-concurrent-reconciles, and the floor's number of workers")
	fs.DurationVar(&o.probeInterval, "probe-interval", 30*time.Second,
		"the manager's --default-probe-interval (the backends set no spec.probe.interval), at least 10s")
	fs.StringVar(&scenarios, "scenarios", strings.Join(allScenarios, ","),
		"comma-separated scenarios to run; they always run in this order: "+strings.Join(allScenarios, ","))
	fs.IntVar(&o.unrelatedSecrets, "unrelated-secrets", 50000, "Secrets (1 KiB of data each) the memory scenario creates in namespaces of their own")
	fs.IntVar(&o.unrelatedConfigMaps, "unrelated-configmaps", 10000, "ConfigMaps (1 KiB of data each) the memory scenario creates in namespaces of their own")
	fs.IntVar(&o.killN, "kill-n", 1000, "backends of kill-burst")
	fs.IntVar(&o.latencySamples, "latency-samples", 50, "backends apply-latency creates one at a time")
	fs.IntVar(&o.shardRelabel, "shard-relabel", 1000,
		"backends the shards scenario locks with a StateLock on shard a and then moves, with their StateLocks, to shard b; at most shard a's (about n/2)")
	fs.DurationVar(&o.settle, "settle", 10*time.Second, "how long restart-* and memory wait after the resync before reading the manager's RSS")
	fs.StringVar(&o.pprofDir, "pprof", "", "directory for the manager's CPU profile during the burst and its heap and allocs profiles after it")
	fs.IntVar(&o.pprofSeconds, "pprof-seconds", 30, "length in seconds of the burst's CPU profile, which starts with the burst")
	fs.DurationVar(&o.timeout, "timeout", 0, "bound of each wait for Ready or a resync; 0 is 2m plus 100ms per backend")
	fs.StringVar(&o.logDir, "log-dir", "", "keep the manager's and the state server's logs in this directory")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.scenarios, err = parseScenarios(scenarios); err != nil {
		return options{}, err
	}
	return o, o.validate()
}

// validate checks the settings' bounds.
func (o options) validate() error {
	var errs []error
	positive := map[string]int{
		"-n": o.n, "-per-namespace": o.perNamespace, "-workers": o.workers, "-max-concurrent-reconciles": o.concurrency,
		"-kill-n": o.killN, "-latency-samples": o.latencySamples, "-pprof-seconds": o.pprofSeconds, "-shard-relabel": o.shardRelabel,
	}
	for _, name := range slices.Sorted(maps.Keys(positive)) {
		if positive[name] < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", name, positive[name]))
		}
	}
	if o.unrelatedSecrets < 0 || o.unrelatedConfigMaps < 0 {
		errs = append(errs, errors.New("-unrelated-secrets and -unrelated-configmaps cannot be negative"))
	}
	if o.probeInterval < backendsv1alpha1.MinProbeInterval || o.probeInterval > backendsv1alpha1.MaxProbeInterval {
		errs = append(errs, fmt.Errorf("-probe-interval must be between %s and %s, got %s",
			backendsv1alpha1.MinProbeInterval, backendsv1alpha1.MaxProbeInterval, o.probeInterval))
	}
	if o.settle < 0 || o.timeout < 0 {
		errs = append(errs, errors.New("-settle and -timeout cannot be negative"))
	}
	return errors.Join(errs...)
}

// parseScenarios reads a comma-separated list of scenario names and
// returns them in the order they run, without duplicates.
func parseScenarios(list string) ([]string, error) {
	want := map[string]bool{}
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(allScenarios, name) {
			return nil, fmt.Errorf("-scenarios: unknown scenario %q, want some of %s", name, strings.Join(allScenarios, ","))
		}
		want[name] = true
	}
	if len(want) == 0 {
		return nil, errors.New("-scenarios: no scenario named")
	}
	var out []string
	for _, name := range allScenarios {
		if want[name] {
			out = append(out, name)
		}
	}
	return out, nil
}

// restIntervals is the number of probe intervals of a window at rest.
const restIntervals = 3

// restWindow is a window at rest: restIntervals probe intervals and their
// 10% jitter.
func (o options) restWindow() time.Duration {
	return restIntervals * o.probeInterval * 11 / 10
}

// waitTimeout is the bound of a wait for backends backends.
func (o options) waitTimeout(backends int) time.Duration {
	if o.timeout > 0 {
		return o.timeout
	}
	return 2*time.Minute + time.Duration(backends)*100*time.Millisecond
}
