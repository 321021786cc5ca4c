package chart

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/model/labels"
)

// The series of a StateHistory the state history alert reads: when it
// last found its source's state kept (a Unix time), and its failed reads
// by reason.
const (
	keptMetric     = "infrastate_statehistory_newest_kept_timestamp_seconds"
	failuresMetric = "infrastate_statehistory_failures_total"
)

// history is the labels of the series of the StateHistory name; failed
// those of its failures of one reason.
func history(name string) string { return fmt.Sprintf("name=%q", name) }
func failed(name string) string {
	return fmt.Sprintf("name=%q,reason=\"DestinationUnreachable\"", name)
}

// historyAlert is the state of the state history alert of a/name with
// the default severity.
func historyAlert(state, name string) string {
	return historyAlertIn(state, "a", name)
}

// historyAlertIn is the state of the state history alert of
// namespace/name with the default severity.
func historyAlertIn(state, namespace, name string) string {
	return alert(state, "namespace", namespace, "name", name, "severity", "warning")
}

// seriesIn is a series as seriesOf writes it, of an object of namespace.
func seriesIn(metric, namespace, object, target, values string) string {
	return fmt.Sprintf("%s{namespace=%q,%s,%s} %s\n", metric, namespace, object, target, values)
}

// keptAt are the values of a kept series served from the scrape first
// to the scrape last (of scrapeInterval), nothing before: each the time
// of its scrape, a history that keeps its state at every read.
func keptAt(first, last int) string {
	step := int(scrapeInterval.Seconds())
	values := fmt.Sprintf("%d+%dx%d", first*step, step, last-first)
	if first == 0 {
		return values
	}
	return fmt.Sprintf("_x%d %s", first, values)
}

// TestStateHistoryBehindAlert checks the state history alert with the
// default values (maxAgeSeconds 7200, for 10m): a history whose newest
// kept state is older than two hours fires 10 minutes later, a history
// that keeps its state never does (failures or not), a history that has
// only ever failed fires once it has failed for two hours, and the
// alert follows the history, not the pod or the scrape.
func TestStateHistoryBehindAlert(t *testing.T) {
	runAlertCases(t, stateHistoryBehind, map[string]alertCase{
		"an old newest kept state fires after for, a fresh one never": {
			// stale last found its state kept at 0; fresh at every scrape,
			// with a failure at 1m whose counter stays.
			series: seriesOf(keptMetric, history("stale"), oldPod, "0x320") +
				seriesOf(keptMetric, history("fresh"), oldPod, keptAt(0, 320)) +
				seriesOf(failuresMetric, failed("fresh"), oldPod, "_ _ 1x318"),
			want: map[time.Duration][]string{
				60 * time.Minute:  {},
				120 * time.Minute: {},
				121 * time.Minute: {historyAlert("pending", "stale")},
				130 * time.Minute: {historyAlert("pending", "stale")},
				131 * time.Minute: {historyAlert("firing", "stale")},
				150 * time.Minute: {historyAlert("firing", "stale")},
			},
		},
		"a history that only fails fires once it has failed for maxAgeSeconds": {
			// never fails from 10m on and keeps nothing; a failure of
			// new, at 100m, is too recent.
			series: seriesOf(failuresMetric, failed("never"), oldPod, "_x20 1+1x300") +
				seriesOf(failuresMetric, failed("new"), oldPod, "_x200 1+1x120"),
			want: map[time.Duration][]string{
				60 * time.Minute:  {},
				129 * time.Minute: {},
				130 * time.Minute: {historyAlert("pending", "never")},
				139 * time.Minute: {historyAlert("pending", "never")},
				140 * time.Minute: {historyAlert("firing", "never")},
				160 * time.Minute: {historyAlert("firing", "never")},
			},
		},
		"a history that fails, then keeps its state, never fires": {
			series: seriesOf(failuresMetric, failed("late"), oldPod, "1+1x320") +
				seriesOf(keptMetric, history("late"), oldPod, keptAt(120, 320)),
			want: map[time.Duration][]string{
				59 * time.Minute:  {},
				120 * time.Minute: {},
				130 * time.Minute: {},
				160 * time.Minute: {},
			},
		},
		"a history that only failed keeps its state at last: the alert ends": {
			// Failing from 0, firing from 130m; the first kept state at 140m.
			series: seriesOf(failuresMetric, failed("late"), oldPod, "1+1x320") +
				seriesOf(keptMetric, history("late"), oldPod, keptAt(280, 320)),
			want: map[time.Duration][]string{
				120 * time.Minute: {historyAlert("pending", "late")},
				139 * time.Minute: {historyAlert("firing", "late")},
				140 * time.Minute: {},
				160 * time.Minute: {},
			},
		},
		"a deleted history's alert ends with its series": {
			// Its series go at 140m: the failures of two hours ago are
			// still there, not the history.
			series: seriesOf(failuresMetric, failed("gone"), oldPod, "1+1x280 stale") +
				seriesOf(keptMetric, history("old"), oldPod, "0x280 stale"),
			want: map[time.Duration][]string{
				131 * time.Minute: {historyAlert("firing", "gone"), historyAlert("firing", "old")},
				139 * time.Minute: {historyAlert("firing", "gone"), historyAlert("firing", "old")},
				141 * time.Minute: {},
				150 * time.Minute: {},
			},
		},
		"one name in two namespaces": {
			// a/stale is behind, b/stale fresh; a/never only fails, b/never
			// fails and keeps its state.
			series: seriesIn(keptMetric, "a", history("stale"), oldPod, "0x300") +
				seriesIn(keptMetric, "b", history("stale"), oldPod, keptAt(0, 300)) +
				seriesIn(failuresMetric, "a", failed("never"), oldPod, "1+1x300") +
				seriesIn(failuresMetric, "b", failed("never"), oldPod, "1+1x300") +
				seriesIn(keptMetric, "b", history("never"), oldPod, keptAt(0, 300)),
			want: map[time.Duration][]string{
				120 * time.Minute: {historyAlert("pending", "never")},
				130 * time.Minute: {historyAlert("firing", "never"), historyAlert("pending", "stale")},
				141 * time.Minute: {historyAlert("firing", "never"), historyAlert("firing", "stale")},
			},
		},
		"a scrape without honorLabels, one name in two namespaces": {
			series: renamedSeriesOf(keptMetric, "a", history("stale"), oldPod, "0x300") +
				renamedSeriesOf(keptMetric, "b", history("stale"), oldPod, keptAt(0, 300)) +
				renamedSeriesOf(failuresMetric, "a", failed("never"), oldPod, "1+1x300") +
				renamedSeriesOf(failuresMetric, "b", failed("never"), oldPod, "1+1x300") +
				renamedSeriesOf(keptMetric, "b", history("never"), oldPod, keptAt(0, 300)),
			want: map[time.Duration][]string{
				120 * time.Minute: {historyAlert("pending", "never")},
				130 * time.Minute: {historyAlert("firing", "never"), historyAlert("pending", "stale")},
				141 * time.Minute: {historyAlert("firing", "never"), historyAlert("firing", "stale")},
			},
		},
		"two targets serve the histories": {
			series: seriesOf(keptMetric, history("stale"), oldPod, "0x300") + seriesOf(keptMetric, history("stale"), newPod, "0x300") +
				seriesOf(failuresMetric, failed("never"), oldPod, "1+1x300") + seriesOf(failuresMetric, failed("never"), newPod, "1+1x300"),
			want: map[time.Duration][]string{
				130 * time.Minute: {historyAlert("firing", "never"), historyAlert("pending", "stale")},
				141 * time.Minute: {historyAlert("firing", "never"), historyAlert("firing", "stale")},
			},
		},
		"the series move to a new pod": {
			// The old pod goes at 135m (its series marked stale at
			// 136m); the new one serves from 135m, its counters from 0.
			series: seriesOf(keptMetric, history("stale"), oldPod, "0x270 _ stale") +
				seriesOf(keptMetric, history("stale"), newPod, "_x270 0x60") +
				seriesOf(failuresMetric, failed("never"), oldPod, "1+1x270 _ stale") +
				seriesOf(failuresMetric, failed("never"), newPod, "_x270 1+1x60"),
			want: map[time.Duration][]string{
				131 * time.Minute: {historyAlert("firing", "never"), historyAlert("firing", "stale")},
				135 * time.Minute: {historyAlert("firing", "never"), historyAlert("firing", "stale")},
				136 * time.Minute: {historyAlert("firing", "never"), historyAlert("firing", "stale")},
				137 * time.Minute: {historyAlert("firing", "never"), historyAlert("firing", "stale")},
				160 * time.Minute: {historyAlert("firing", "never"), historyAlert("firing", "stale")},
			},
		},
		"a restarted manager that has not served the kept series yet": {
			// The old pod kept the state at every read until it went at
			// 130m; the new one fails first, and keeps the state at 140m.
			// Failures now and two hours ago, no kept series now: the
			// window of kept samples holds the alert back.
			series: seriesOf(failuresMetric, failed("restarted"), oldPod, "1+1x260 _ stale") +
				seriesOf(failuresMetric, failed("restarted"), newPod, "_x262 1+1x60") +
				seriesOf(keptMetric, history("restarted"), oldPod, keptAt(0, 260)+" _ stale") +
				seriesOf(keptMetric, history("restarted"), newPod, keptAt(280, 320)),
			want: map[time.Duration][]string{
				130 * time.Minute: {},
				135 * time.Minute: {},
				139 * time.Minute: {},
				150 * time.Minute: {},
			},
		},
		"with the values' maxAgeSeconds and for": {
			set: []string{"metrics.prometheusRule.stateHistoryBehind.maxAgeSeconds=900", "metrics.prometheusRule.stateHistoryBehind.for=5m"},
			series: seriesOf(keptMetric, history("stale"), oldPod, "0x100") +
				seriesOf(keptMetric, history("fresh"), oldPod, keptAt(0, 100)) +
				seriesOf(failuresMetric, failed("never"), oldPod, "1+1x100"),
			want: map[time.Duration][]string{
				14 * time.Minute: {},
				15 * time.Minute: {historyAlert("pending", "never")},
				16 * time.Minute: {historyAlert("pending", "never"), historyAlert("pending", "stale")},
				20 * time.Minute: {historyAlert("firing", "never"), historyAlert("pending", "stale")},
				21 * time.Minute: {historyAlert("firing", "never"), historyAlert("firing", "stale")},
			},
		},
	})
}

// TestStateHistoryBehindValue checks the alert's value, which its
// annotations print: the age of the newest kept state, and for a history
// that never kept one, maxAgeSeconds, how long it has at least failed.
func TestStateHistoryBehindValue(t *testing.T) {
	rule := alertsOf(t, renderedRule(t, "metrics.prometheusRule.enabled=true"))[stateHistoryBehind]
	store := loadSeries(t, scrapeInterval, seriesOf(keptMetric, history("stale"), oldPod, "600x320")+
		seriesOf(failuresMetric, failed("never"), oldPod, "1+1x320"))
	const at = 150 * time.Minute
	vector, err := evalInstant(t, newEngine(), store, rule.Expr, at)
	if err != nil {
		t.Fatalf("evaluating %s: %v", rule.Expr, err)
	}
	got := map[string]float64{}
	for _, sample := range vector {
		got[sample.Metric.String()] = sample.F
	}
	want := map[string]float64{
		labels.FromStrings("namespace", "a", "name", "stale").String(): at.Seconds() - 600,
		labels.FromStrings("namespace", "a", "name", "never").String(): 7200,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values at %v (-want +got):\n%s\nexpr:\n%s", at, diff, rule.Expr)
	}
}
