// Command scale measures the operator at scale, by hand: `make
// bench-scale N=...` or `go run ./test/scale -n N [flags]`. It starts its
// own kube-apiserver and etcd (envtest), builds and runs cmd/manager and
// cmd/stateserver as processes on loopback, and runs scenarios (bursts
// of creates, rest, restarts, cold starts, memory with unrelated objects,
// a crash in the middle of a burst, single-create latency, and two
// sharded managers with a relabel of locked backends between them), each
// measured against an in-process "floor" controller that does only what
// the operator must do for a backend: its writes, one read of the state
// and the status the API gives a new backend. It prints one Markdown table with a legend;
// see docs/performance.md.
//
// It is not a test: `make test` runs only the unit tests of its pure
// parts.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/version"
	ctrl "sigs.k8s.io/controller-runtime"
)

func main() {
	log.SetFlags(log.Ltime)
	log.SetPrefix("scale: ")
	opts, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		log.Printf("%v", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, opts, os.Stdout)
	stop()
	os.Exit(code)
}

// run runs the benchmark and prints its report to out; it returns the
// exit code: 1 when a scenario failed or a check did not pass.
func run(ctx context.Context, opts options, out io.Writer) int {
	// The harness's informers log through controller-runtime; their
	// errors show up as timeouts of the scenarios anyway.
	ctrl.SetLogger(logr.Discard())
	if opts.pprofDir != "" {
		if err := os.MkdirAll(opts.pprofDir, 0o750); err != nil {
			log.Printf("creating %s: %v", opts.pprofDir, err)
			return 1
		}
	}
	machine := readMachineInfo()
	log.Printf("machine: %s", machine)
	started := time.Now()

	h, err := newHarness(ctx, opts)
	if h != nil {
		defer h.close()
	}
	if err != nil {
		log.Printf("setting up: %v", err)
		return 1
	}
	runErr := h.runScenarios(ctx)
	if runErr != nil {
		log.Printf("%v (logs in %s)", runErr, h.logDir)
	}
	apiVersion := "unknown"
	if v, err := h.raw.Get().AbsPath("/version").DoRaw(ctx); err == nil {
		apiVersion = apiServerVersion(v)
	}
	report(out, opts, machine, apiVersion, time.Since(started), h.results, h.profiles)
	if runErr != nil || h.failed {
		// A failure's logs are what tells why: they outlive the work
		// directory (see close).
		h.keepLogs = true
		return 1
	}
	return 0
}

// report prints the results: the machine, the settings, the table, its
// legend and the profiles' hints.
func report(out io.Writer, o options, m machineInfo, apiServer string, took time.Duration, results []result, profiles []string) {
	p := func(format string, args ...any) { _, _ = fmt.Fprintf(out, format+"\n", args...) }
	p("")
	p("## Scale benchmark")
	p("")
	p("- machine: %s", m)
	p("- control plane: envtest kube-apiserver %s and etcd, on the same machine", apiServer)
	p("- command: go run ./test/scale %s", strings.Join(os.Args[1:], " "))
	p("- settings: n=%d per-namespace=%d workers=%d max-concurrent-reconciles=%d probe-interval=%s "+
		"unrelated-secrets=%d unrelated-configmaps=%d kill-n=%d latency-samples=%d shard-relabel=%d settle=%s",
		o.n, o.perNamespace, o.workers, o.concurrency, o.probeInterval,
		o.unrelatedSecrets, o.unrelatedConfigMaps, o.killN, o.latencySamples, o.shardRelabel, o.settle)
	p("- run took %s", took.Round(time.Second))
	p("")
	_, _ = io.WriteString(out, resultsTable(results))
	p("")
	_, _ = io.WriteString(out, legend)
	if len(profiles) > 0 {
		p("")
		p("Profiles of the manager during and after the burst:")
		for _, cmd := range profiles {
			p("    %s", cmd)
		}
	}
}

// apiServerVersion reads gitVersion from the API server's /version
// answer.
func apiServerVersion(body []byte) string {
	var v version.Info
	if err := json.Unmarshal(body, &v); err != nil || v.GitVersion == "" {
		return "unknown"
	}
	return v.GitVersion
}
