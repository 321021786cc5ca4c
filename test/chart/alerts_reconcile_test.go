package chart

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// errorsMetric is controller-runtime's counter of reconciliations that
// ended in an error.
const errorsMetric = "controller_runtime_reconcile_errors_total"

// errorCounts are the values of an errors counter as a pod serves it,
// in promtool's notation: nothing before start, then at each scrape to
// end the number of the errors at times errs the pod has seen.
func errorCounts(start, end time.Duration, errs []time.Duration) string {
	var values strings.Builder
	for at := time.Duration(0); at <= end; at += scrapeInterval {
		if at < start {
			values.WriteString("_ ")
			continue
		}
		n := 0
		for _, e := range errs {
			if e >= start && e <= at {
				n++
			}
		}
		fmt.Fprintf(&values, "%d ", n)
	}
	return values.String()
}

// errorSeries is the errors counter of the controller name as a target
// serves it, with values. The manager's series have no namespace label:
// the target's is kept.
func errorSeries(name, target, values string) string {
	return fmt.Sprintf("%s{controller=%q,namespace=\"ops\",%s} %s\n", errorsMetric, name, target, values)
}

// shardPod is the pod of shard a's manager, next to oldPod, the main
// manager's.
var shardPod = targetLabels("r-backend-operator-shard-a-7c9f5b-k2m4p", "10.0.3.12")

// every returns the times from first to until, period apart.
func every(first, period, until time.Duration) []time.Duration {
	var out []time.Duration
	for at := first; at <= until; at += period {
		out = append(out, at)
	}
	return out
}

// statesEveryMinute are the wanted alert states at every evaluation from
// 0 to end: state of the remotestate controller's alert in [from, to],
// none outside (none at all when from is after to).
func statesEveryMinute(end, from, to time.Duration, state string) map[time.Duration][]string {
	out := map[time.Duration][]string{}
	for at := time.Duration(0); at <= end; at += ruleInterval {
		out[at] = []string{}
		if at >= from && at <= to {
			out[at] = []string{alert(state, "controller", "remotestate", "severity", "warning")}
		}
	}
	return out
}

// mergeStates returns a with b's checkpoints over it.
func mergeStates(a, b map[time.Duration][]string) map[time.Duration][]string {
	maps.Copy(a, b)
	return a
}

// TestReconcileErrorsAlert checks the reconcile errors alert over the
// errors of a stuck object, which controller-runtime retries with a
// backoff that reaches 1000s between two errors: the alert fires once
// the errors have gone on for its for, and stays firing at every
// evaluation, across a pod change too; errors that stop sooner never
// fire it.
func TestReconcileErrorsAlert(t *testing.T) {
	const end = 105 * time.Minute
	// The first error at 100s, then one every 1000s: the alert is pending
	// once the errors span 20m, at 22m, and firing 15m later.
	stuck := every(100*time.Second, 1000*time.Second, end)
	runAlertCases(t, reconcileErrors, map[string]alertCase{
		"one object erring every 1000s": {
			series: errorSeries("remotestate", oldPod, errorCounts(0, end, stuck)) +
				errorSeries("httpbackend", oldPod, errorCounts(0, end, nil)) +
				// Not one of the operator's controllers.
				errorSeries("other", oldPod, errorCounts(0, end, every(0, 10*time.Second, end))),
			want: mergeStates(statesEveryMinute(end, 37*time.Minute, end, "firing"), statesEveryMinute(36*time.Minute, 22*time.Minute, 36*time.Minute, "pending")),
		},
		"the errors move to a new pod": {
			// The old pod goes at 50m (its series marked stale at 51m);
			// the new one serves from 49m30s and counts from 0.
			series: errorSeries("remotestate", oldPod, errorCounts(0, 50*time.Minute, stuck)+"_ stale") +
				errorSeries("remotestate", newPod, errorCounts(99*time.Minute/2, end, stuck)),
			want: mergeStates(statesEveryMinute(end, 37*time.Minute, end, "firing"), statesEveryMinute(36*time.Minute, 22*time.Minute, 36*time.Minute, "pending")),
		},
		"a stuck object in each of two shards' managers": {
			// Each manager serves the errors of its own shard's objects:
			// one alert for the controller, as with one manager.
			set: []string{"shards={a}"},
			series: errorSeries("remotestate", oldPod, errorCounts(0, end, stuck)) +
				errorSeries("remotestate", shardPod, errorCounts(0, end, every(600*time.Second, 1000*time.Second, end))),
			want: mergeStates(statesEveryMinute(end, 37*time.Minute, end, "firing"), statesEveryMinute(36*time.Minute, 22*time.Minute, 36*time.Minute, "pending")),
		},
		"one error": {
			series: errorSeries("remotestate", oldPod, errorCounts(0, end, []time.Duration{10*time.Minute + 5*time.Second})),
			want:   statesEveryMinute(end, end+1, end, ""),
		},
		"errors for 10 minutes, then none": {
			// A retry storm that clears: pending while the errors are both
			// recent and 20m old, which lasts as long as the storm.
			series: errorSeries("remotestate", oldPod, errorCounts(0, end, every(65*time.Second, 30*time.Second, 665*time.Second))),
			want:   statesEveryMinute(end, 22*time.Minute, 30*time.Minute, "pending"),
		},
	})
}

// TestReconcileErrorsWindowOutlastsBackoff checks that the windows of the
// reconcile errors alert are longer than the longest backoff of
// controller-runtime's default rate limiter, which the manager's
// controllers use, with a scrape to spare on each side: a stuck object's
// errors, at most that far apart, then never leave a window empty.
func TestReconcileErrorsWindowOutlastsBackoff(t *testing.T) {
	for _, dir := range []string{"controllers", filepath.Join("cmd", "manager")} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(string(data), "RateLimiter") {
				t.Errorf("%s sets a rate limiter of its own: check the reconcile errors alert's window against its longest backoff", path)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("reading %s: %v", dir, err)
		}
	}
	maxBackoff := longestDefaultBackoff(t)
	if maxBackoff < 10*time.Minute {
		t.Fatalf("the default rate limiter's longest backoff is %v: not the one this test expects", maxBackoff)
	}
	const spare = 2 * time.Minute
	expr, err := parser.ParseExpr(alertsOf(t, renderedRule(t, "metrics.prometheusRule.enabled=true"))[reconcileErrors].Expr)
	if err != nil {
		t.Fatalf("parsing the expr: %v", err)
	}
	var windows int
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		m, ok := node.(*parser.MatrixSelector)
		if !ok {
			return nil
		}
		windows++
		if m.Range < maxBackoff+spare {
			t.Errorf("window %s is shorter than the longest backoff, %v, and %v", m, maxBackoff, spare)
		}
		if vs := m.VectorSelector.(*parser.VectorSelector); vs.OriginalOffset > m.Range {
			t.Errorf("window %s leaves a gap after it", m)
		}
		return nil
	})
	if windows == 0 {
		t.Errorf("the expr %s has no window", expr)
	}
}

// longestDefaultBackoff returns the longest delay controller-runtime's
// default rate limiter puts between two retries of one failing request:
// it starts a controller without a rate limiter of its own, takes the
// limiter it defaults to, and fails the same request until the delay
// stops growing.
func longestDefaultBackoff(t *testing.T) time.Duration {
	t.Helper()
	limiters := make(chan workqueue.TypedRateLimiter[reconcile.Request], 1)
	c, err := controller.NewTypedUnmanaged("backoff-probe", controller.TypedOptions[reconcile.Request]{
		Reconciler:         reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil }),
		SkipNameValidation: new(true),
		NewQueue: func(_ string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
			limiters <- limiter
			return workqueue.NewTypedRateLimitingQueue(limiter)
		},
	})
	if err != nil {
		t.Fatalf("making a controller: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the controller: %v", err)
		}
	}()
	var limiter workqueue.TypedRateLimiter[reconcile.Request]
	select {
	case limiter = <-limiters:
	case <-time.After(30 * time.Second):
		t.Fatal("the controller made no queue")
	}
	request := reconcile.Request{}
	var longest time.Duration
	for range 64 {
		longest = max(longest, limiter.When(request))
	}
	return longest
}
