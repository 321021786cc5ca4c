package chart

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/model/labels"
)

// The tests of this file evaluate the per-object alerts of the rendered
// PrometheusRule with Prometheus' engine (promql_test.go) over series as
// a Prometheus Operator scrape stores them: the manager's labels, the
// object's namespace kept (honorLabels) or renamed exported_namespace
// (without it), and the labels of the target (pod, instance, job, ...)
// added.

// The scrape and rule evaluation intervals of the tests.
const (
	scrapeInterval = 30 * time.Second
	ruleInterval   = time.Minute
)

// Two manager pods: the one before a rolling update or a leader failover,
// and the one after.
var (
	oldPod = targetLabels("r-backend-operator-5f9c7d-x2x7k", "10.0.1.17")
	newPod = targetLabels("r-backend-operator-6d8b4f-q8r2m", "10.0.2.31")
)

// targetLabels are the labels the scrape of a manager pod adds to its
// series: those of the Prometheus Operator's endpoint targets.
func targetLabels(pod, ip string) string {
	return fmt.Sprintf(`container="manager",endpoint="https",instance="%s:8443",job="r-backend-operator-metrics",pod=%q,service="r-backend-operator-metrics"`, ip, pod)
}

// seriesOf is a series in promtool's notation: metric with the object's
// labels (namespace a) and a target's, and its values.
func seriesOf(metric, object, target, values string) string {
	return fmt.Sprintf("%s{namespace=\"a\",%s,%s} %s\n", metric, object, target, values)
}

// renamedSeriesOf is a series as a scrape that does not honour the
// scraped labels stores it: the object's namespace (namespace) renamed
// exported_namespace, the target's namespace (ops) in namespace.
func renamedSeriesOf(metric, namespace, object, target, values string) string {
	return fmt.Sprintf("%s{exported_namespace=%q,namespace=\"ops\",%s,%s} %s\n", metric, namespace, object, target, values)
}

// Objects, as the labels of their series.
const (
	web  = `kind="HttpBackend",name="web"`
	db   = `kind="CosBackend",name="db"`
	api  = `kind="HttpBackend",name="api"`
	jobs = `kind="HttpBackend",name="jobs"`
)

// alert is an alert state as alertStates reports it: state and the
// alert's labels, given as name, value pairs.
func alert(state string, kv ...string) string {
	return state + " " + labels.FromStrings(kv...).String()
}

// backendAlert is the state of an alert of backend kind a/name with the
// default severity.
func backendAlert(state, kind, name string) string {
	return alert(state, "kind", kind, "namespace", "a", "name", name, "severity", "warning")
}

// alertCase is one scenario of an alert: series, and the alert states at
// some evaluations.
type alertCase struct {
	// set are more chart values.
	set    []string
	series string
	// want are the alerts at each checkpoint.
	want map[time.Duration][]string
}

// runAlertCases renders the chart's PrometheusRule for each case and
// checks the alert's states over the case's series.
func runAlertCases(t *testing.T, name string, cases map[string]alertCase) {
	t.Helper()
	for caseName, tc := range cases {
		t.Run(caseName, func(t *testing.T) {
			rule := alertsOf(t, renderedRule(t, append([]string{"metrics.prometheusRule.enabled=true"}, tc.set...)...))[name]
			var end time.Duration
			var checkpoints []time.Duration
			for at := range tc.want {
				end = max(end, at)
				checkpoints = append(checkpoints, at)
			}
			got := alertStates(t, rule, loadSeries(t, scrapeInterval, tc.series), ruleInterval, end, checkpoints...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: alerts by evaluation time (-want +got):\n%s\nexpr:\n%s", name, diff, rule.Expr)
			}
		})
	}
}

// TestBackendUnreachableAlert checks that a backend whose probes read 0
// raises one alert after for, labelled by the object only, which a pod
// change or a second target serving the object leaves as it is.
func TestBackendUnreachableAlert(t *testing.T) {
	const metric = "infrastate_backend_reachable"
	runAlertCases(t, backendUnreachable, map[string]alertCase{
		"a backend at 0 fires after for, one at 1 never": {
			series: seriesOf(metric, web, oldPod, "0x60") + seriesOf(metric, api, oldPod, "1x60"),
			want: map[time.Duration][]string{
				14 * time.Minute: {backendAlert("pending", "HttpBackend", "web")},
				15 * time.Minute: {backendAlert("firing", "HttpBackend", "web")},
				30 * time.Minute: {backendAlert("firing", "HttpBackend", "web")},
			},
		},
		"a backend back at 1 ends its alert": {
			series: seriesOf(metric, web, oldPod, "0x40 1x20"),
			want: map[time.Duration][]string{
				20 * time.Minute: {backendAlert("firing", "HttpBackend", "web")},
				21 * time.Minute: {},
			},
		},
		"the series moves to a new pod (lookback)": {
			// The old pod's series stop at 10m; the new pod's start at
			// 10m30s.
			series: seriesOf(metric, web, oldPod, "0x20") + seriesOf(metric, web, newPod, "_x21 0x40"),
			want: map[time.Duration][]string{
				9 * time.Minute:  {backendAlert("pending", "HttpBackend", "web")},
				12 * time.Minute: {backendAlert("pending", "HttpBackend", "web")},
				15 * time.Minute: {backendAlert("firing", "HttpBackend", "web")},
				30 * time.Minute: {backendAlert("firing", "HttpBackend", "web")},
			},
		},
		"the series moves to a new pod (staleness markers)": {
			// The new leader serves from 9m30s; Prometheus marks the old
			// target's series stale two scrapes after it went, at 11m.
			series: seriesOf(metric, web, oldPod, "0x20 _ stale") + seriesOf(metric, web, newPod, "_x19 0x40"),
			want: map[time.Duration][]string{
				10 * time.Minute: {backendAlert("pending", "HttpBackend", "web")},
				15 * time.Minute: {backendAlert("firing", "HttpBackend", "web")},
				25 * time.Minute: {backendAlert("firing", "HttpBackend", "web")},
			},
		},
		"two targets serve the object": {
			series: seriesOf(metric, web, oldPod, "0x40") + seriesOf(metric, web, newPod, "0x40"),
			want: map[time.Duration][]string{
				15 * time.Minute: {backendAlert("firing", "HttpBackend", "web")},
			},
		},
		"a scrape without honorLabels, one name in two namespaces": {
			series: renamedSeriesOf(metric, "a", web, oldPod, "0x40") + renamedSeriesOf(metric, "b", web, oldPod, "1x40"),
			want: map[time.Duration][]string{
				15 * time.Minute: {backendAlert("firing", "HttpBackend", "web")},
			},
		},
	})
}

// TestStateLockStaleAlert checks that a lock held longer than its
// backend's staleAfter raises one alert per backend, only for a backend
// with both series, and that a pod change or two targets serving the
// backend neither break the join nor restart the alert.
func TestStateLockStaleAlert(t *testing.T) {
	const age, staleAfter = "infrastate_state_lock_age_seconds", "infrastate_backend_lock_stale_after_seconds"
	runAlertCases(t, stateLockStale, map[string]alertCase{
		"only past the threshold, only with both series": {
			series: seriesOf(age, web, oldPod, "7200+30x40") + seriesOf(staleAfter, web, oldPod, "3600x40") +
				// 3000s old at 0: past 3600s from 10m30s on.
				seriesOf(age, db, oldPod, "3000+30x40") + seriesOf(staleAfter, db, oldPod, "3600x40") +
				// No threshold: staleAfter is not set.
				seriesOf(age, api, oldPod, "7200+30x40") +
				// No age: no lock is held.
				seriesOf(staleAfter, jobs, oldPod, "60x40"),
			want: map[time.Duration][]string{
				0:                {backendAlert("pending", "HttpBackend", "web")},
				1 * time.Minute:  {backendAlert("firing", "HttpBackend", "web")},
				10 * time.Minute: {backendAlert("firing", "HttpBackend", "web")},
				11 * time.Minute: {backendAlert("firing", "HttpBackend", "web"), backendAlert("pending", "CosBackend", "db")},
				12 * time.Minute: {backendAlert("firing", "CosBackend", "db"), backendAlert("firing", "HttpBackend", "web")},
			},
		},
		"a scrape without honorLabels, one name in two namespaces": {
			series: renamedSeriesOf(age, "a", web, oldPod, "7200+30x40") + renamedSeriesOf(staleAfter, "a", web, oldPod, "3600x40") +
				renamedSeriesOf(age, "b", web, oldPod, "60+30x40") + renamedSeriesOf(staleAfter, "b", web, oldPod, "3600x40"),
			want: map[time.Duration][]string{
				10 * time.Minute: {backendAlert("firing", "HttpBackend", "web")},
			},
		},
		"a lock released ends the alert": {
			series: seriesOf(age, web, oldPod, "7200+30x20 stale") + seriesOf(staleAfter, web, oldPod, "3600x40"),
			want: map[time.Duration][]string{
				10 * time.Minute: {backendAlert("firing", "HttpBackend", "web")},
				11 * time.Minute: {},
			},
		},
		"two targets serve the backend": {
			series: seriesOf(age, web, oldPod, "7200+30x40") + seriesOf(staleAfter, web, oldPod, "3600x40") +
				seriesOf(age, web, newPod, "7200+30x40") + seriesOf(staleAfter, web, newPod, "3600x40"),
			want: map[time.Duration][]string{
				0:                {backendAlert("pending", "HttpBackend", "web")},
				10 * time.Minute: {backendAlert("firing", "HttpBackend", "web")},
			},
		},
		"the series move to a new pod": {
			series: seriesOf(age, web, oldPod, "7200+30x20 _ stale") + seriesOf(staleAfter, web, oldPod, "3600x20 _ stale") +
				seriesOf(age, web, newPod, "_x19 7770+30x40") + seriesOf(staleAfter, web, newPod, "_x19 3600x40"),
			want: map[time.Duration][]string{
				1 * time.Minute:  {backendAlert("firing", "HttpBackend", "web")},
				10 * time.Minute: {backendAlert("firing", "HttpBackend", "web")},
				12 * time.Minute: {backendAlert("firing", "HttpBackend", "web")},
			},
		},
	})
}

// TestRemoteStateNotRefreshedAlert checks that a RemoteState whose last
// publication is older than intervalFactor refresh intervals, and than
// minimumAgeSeconds, raises one alert after for, and not before.
func TestRemoteStateNotRefreshedAlert(t *testing.T) {
	const lastSuccess, interval = "infrastate_remotestate_last_success_timestamp_seconds", "infrastate_remotestate_refresh_interval_seconds"
	remote := func(name string) string { return fmt.Sprintf("name=%q", name) }
	remoteAlert := func(state, name string) string {
		return alert(state, "namespace", "a", "name", name, "severity", "warning")
	}
	// fast refreshes every minute: 3 intervals are less than the floor,
	// 900s. slow every 10 minutes: 3 intervals, 1800s, are more. Both
	// last published at 0.
	fastAndSlow := seriesOf(lastSuccess, remote("fast"), oldPod, "0x100") + seriesOf(interval, remote("fast"), oldPod, "60x100") +
		seriesOf(lastSuccess, remote("slow"), oldPod, "0x100") + seriesOf(interval, remote("slow"), oldPod, "600x100")
	runAlertCases(t, remoteStateNotRefreshed, map[string]alertCase{
		"after the floor or after intervalFactor intervals, whichever is longer": {
			series: fastAndSlow,
			want: map[time.Duration][]string{
				15 * time.Minute: {},
				16 * time.Minute: {remoteAlert("pending", "fast")},
				20 * time.Minute: {remoteAlert("pending", "fast")},
				21 * time.Minute: {remoteAlert("firing", "fast")},
				30 * time.Minute: {remoteAlert("firing", "fast")},
				31 * time.Minute: {remoteAlert("firing", "fast"), remoteAlert("pending", "slow")},
				36 * time.Minute: {remoteAlert("firing", "fast"), remoteAlert("firing", "slow")},
			},
		},
		"with the values' factor and floor": {
			set:    []string{"metrics.prometheusRule.remoteStateNotRefreshed.intervalFactor=2", "metrics.prometheusRule.remoteStateNotRefreshed.minimumAgeSeconds=60"},
			series: fastAndSlow,
			want: map[time.Duration][]string{
				2 * time.Minute:  {},
				3 * time.Minute:  {remoteAlert("pending", "fast")},
				8 * time.Minute:  {remoteAlert("firing", "fast")},
				21 * time.Minute: {remoteAlert("firing", "fast"), remoteAlert("pending", "slow")},
			},
		},
		"a scrape without honorLabels, one name in two namespaces": {
			series: renamedSeriesOf(lastSuccess, "a", remote("fast"), oldPod, "0x100") + renamedSeriesOf(interval, "a", remote("fast"), oldPod, "60x100") +
				renamedSeriesOf(lastSuccess, "b", remote("fast"), oldPod, "0+30x100") + renamedSeriesOf(interval, "b", remote("fast"), oldPod, "60x100"),
			want: map[time.Duration][]string{
				21 * time.Minute: {remoteAlert("firing", "fast")},
			},
		},
		"a RemoteState that keeps publishing": {
			series: seriesOf(lastSuccess, remote("fast"), oldPod, "0+30x100") + seriesOf(interval, remote("fast"), oldPod, "60x100"),
			want:   map[time.Duration][]string{30 * time.Minute: {}, 50 * time.Minute: {}},
		},
		"the series move to a new pod": {
			series: seriesOf(lastSuccess, remote("fast"), oldPod, "0x40 _ stale") + seriesOf(interval, remote("fast"), oldPod, "60x40 _ stale") +
				seriesOf(lastSuccess, remote("fast"), newPod, "_x39 0x60") + seriesOf(interval, remote("fast"), newPod, "_x39 60x60"),
			want: map[time.Duration][]string{
				21 * time.Minute: {remoteAlert("firing", "fast")},
				40 * time.Minute: {remoteAlert("firing", "fast")},
			},
		},
	})
}
