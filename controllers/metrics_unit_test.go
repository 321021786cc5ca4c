package controllers

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// Names of the series the alerts read, as the tests gather them.
const (
	reachableMetric   = "infrastate_backend_reachable"
	staleAfterMetric  = "infrastate_backend_lock_stale_after_seconds"
	lockHeldMetric    = "infrastate_backend_lock_held"
	stateSizeMetric   = "infrastate_backend_state_size_bytes"
	lastSuccessMetric = "infrastate_remotestate_last_success_timestamp_seconds"
	intervalMetric    = "infrastate_remotestate_refresh_interval_seconds"
)

// gatherFrom gathers g and returns the series of the metrics names whose
// namespace label is namespace, each as "name{label=value,...}" (labels
// sorted, namespace left out) mapped to its value.
func gatherFrom(t *testing.T, g prometheus.Gatherer, namespace string, names ...string) map[string]float64 {
	t.Helper()
	return gatherObject(t, g, namespace, "", names...)
}

// gatherObject is gatherFrom of the series of the object called name
// alone; "" is any name.
func gatherObject(t *testing.T, g prometheus.Gatherer, namespace, name string, names ...string) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics: %v", err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	for _, f := range families {
		if !want[f.GetName()] {
			continue
		}
		for _, m := range f.GetMetric() {
			if key, ok := seriesKey(f.GetName(), m, namespace, name); ok {
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// seriesKey names a series of the object namespace/name (any name when
// it is "") for gatherObject; not ok for a series of another object.
func seriesKey(metric string, m *dto.Metric, namespace, name string) (string, bool) {
	var labels []string
	inNamespace, named := false, name == ""
	for _, l := range m.GetLabel() {
		switch l.GetName() {
		case "namespace":
			inNamespace = l.GetValue() == namespace
			continue
		case "name":
			named = named || l.GetValue() == name
		}
		labels = append(labels, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(labels)
	return metric + "{" + strings.Join(labels, ",") + "}", inNamespace && named
}

// registryOf is a registry that serves m, as the manager's serves the set
// SetupAll registers.
func registryOf(t *testing.T, m *operatorMetrics) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := m.register(reg); err != nil {
		t.Fatal(err)
	}
	return reg
}

// seriesOf is gatherFrom of m.
func seriesOf(t *testing.T, m *operatorMetrics, namespace string, names ...string) map[string]float64 {
	t.Helper()
	return gatherFrom(t, registryOf(t, m), namespace, names...)
}

func TestReachableValue(t *testing.T) {
	cond := func(status metav1.ConditionStatus, reason string) *metav1.Condition {
		return &metav1.Condition{Type: backendsv1alpha1.StateReachableCondition, Status: status, Reason: reason}
	}
	cases := map[string]struct {
		cond   *metav1.Condition
		want   float64
		wantOK bool
	}{
		"not probed yet":                          {cond: nil},
		"a state, or none yet":                    {cond: cond(metav1.ConditionTrue, backendsv1alpha1.ReachableReason), want: 1, wantOK: true},
		"a state that does not parse":             {cond: cond(metav1.ConditionFalse, backendsv1alpha1.StateUnreadableReason), want: 1, wantOK: true},
		"a state that cannot be decrypted":        {cond: cond(metav1.ConditionFalse, backendsv1alpha1.DecryptionFailedReason), want: 1, wantOK: true},
		"a plain state where encryption is due":   {cond: cond(metav1.ConditionFalse, backendsv1alpha1.StateNotEncryptedReason), want: 1, wantOK: true},
		"no answer":                               {cond: cond(metav1.ConditionFalse, backendsv1alpha1.UnreachableReason), want: 0, wantOK: true},
		"credentials refused":                     {cond: cond(metav1.ConditionFalse, backendsv1alpha1.ForbiddenReason), want: 0, wantOK: true},
		"no bucket":                               {cond: cond(metav1.ConditionFalse, backendsv1alpha1.BucketNotFoundReason), want: 0, wantOK: true},
		"a TLS failure":                           {cond: cond(metav1.ConditionFalse, backendsv1alpha1.TLSErrorReason), want: 0, wantOK: true},
		"an address the policy refuses":           {cond: cond(metav1.ConditionFalse, backendsv1alpha1.AddressDeniedReason), want: 0, wantOK: true},
		"probing disabled":                        {cond: cond(metav1.ConditionUnknown, backendsv1alpha1.ProbeDisabledReason)},
		"a role the operator does not assume":     {cond: cond(metav1.ConditionUnknown, backendsv1alpha1.AssumeRoleNotSupportedReason)},
		"a probe that stopped on an operator bug": {cond: cond(metav1.ConditionUnknown, backendsv1alpha1.ProbeFailedReason)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := reachableValue(tc.cond)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("reachableValue = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// TestBackendSeries checks the lifecycle of a backend's series in the
// manager's registry: what the probe steps set, and that they are removed
// when probing stops, the lock is no longer checked, staleAfter is unset
// or the backend is deleted.
func TestBackendSeries(t *testing.T) {
	const ns = "metrics-test"
	kind := backendsv1alpha1.HttpBackendKind
	stale := &backendsv1alpha1.LockPolicy{StaleAfter: &metav1.Duration{Duration: 2 * time.Hour}}
	holder := &backendsv1alpha1.LockInfo{ID: "lock-1", Who: "bob@ci", Created: new(metav1.NewTime(lockTaken))}
	// m is the manager's series; each case starts with a new set.
	var m *operatorMetrics
	probed := func(status metav1.ConditionStatus, reason string) func(*backendsv1alpha1.HttpBackend) {
		return func(b *backendsv1alpha1.HttpBackend) {
			conditions.Set(&b.Status.Conditions, b.Generation, backendsv1alpha1.StateReachableCondition, conditions.Observation{Status: status, Reason: reason})
			m.recordReachable(kind, b, probePlan{condition: backendsv1alpha1.StateReachableCondition})
		}
	}
	probingOff := func(b *backendsv1alpha1.HttpBackend) {
		m.recordReachable(kind, b, probePlan{condition: backendsv1alpha1.StateReachableCondition, off: probeDisabled()})
	}
	heldUnder := func(policy *backendsv1alpha1.LockPolicy) func(*backendsv1alpha1.HttpBackend) {
		return func(b *backendsv1alpha1.HttpBackend) {
			applyLock(m, b, kind, httpFailures, lockReading{held: true, holder: holder}, nil, policy, lockTaken)
		}
	}
	names := []string{reachableMetric, staleAfterMetric, lockHeldMetric}
	reachableIs := func(v float64) map[string]float64 {
		return map[string]float64{reachableMetric + "{kind=HttpBackend,name=web}": v}
	}

	cases := map[string]struct {
		steps []func(*backendsv1alpha1.HttpBackend)
		want  map[string]float64
	}{
		"reached":           {steps: []func(*backendsv1alpha1.HttpBackend){probed(metav1.ConditionTrue, backendsv1alpha1.ReachableReason)}, want: reachableIs(1)},
		"not reached":       {steps: []func(*backendsv1alpha1.HttpBackend){probed(metav1.ConditionFalse, backendsv1alpha1.UnreachableReason)}, want: reachableIs(0)},
		"reached once more": {steps: []func(*backendsv1alpha1.HttpBackend){probed(metav1.ConditionFalse, backendsv1alpha1.UnreachableReason), probed(metav1.ConditionTrue, backendsv1alpha1.ReachableReason)}, want: reachableIs(1)},
		"a probe that failed inside the operator keeps the last value": {
			steps: []func(*backendsv1alpha1.HttpBackend){probed(metav1.ConditionFalse, backendsv1alpha1.UnreachableReason), probed(metav1.ConditionUnknown, backendsv1alpha1.ProbeFailedReason)},
			want:  reachableIs(0),
		},
		"probing disabled": {
			steps: []func(*backendsv1alpha1.HttpBackend){probed(metav1.ConditionFalse, backendsv1alpha1.UnreachableReason), probingOff},
			want:  map[string]float64{},
		},
		"a held lock under staleAfter": {
			steps: []func(*backendsv1alpha1.HttpBackend){heldUnder(stale)},
			want: map[string]float64{
				staleAfterMetric + "{kind=HttpBackend,name=web}": 7200,
				lockHeldMetric + "{kind=HttpBackend,name=web}":   1,
			},
		},
		"a held lock without staleAfter": {
			steps: []func(*backendsv1alpha1.HttpBackend){heldUnder(nil)},
			want:  map[string]float64{lockHeldMetric + "{kind=HttpBackend,name=web}": 1},
		},
		"staleAfter unset since": {
			steps: []func(*backendsv1alpha1.HttpBackend){heldUnder(stale), heldUnder(&backendsv1alpha1.LockPolicy{ReleaseWhenHolderGone: true})},
			want:  map[string]float64{lockHeldMetric + "{kind=HttpBackend,name=web}": 1},
		},
		"the lock no longer checked": {
			steps: []func(*backendsv1alpha1.HttpBackend){heldUnder(stale), func(b *backendsv1alpha1.HttpBackend) {
				applyUncheckedLock(m, b, kind, nil, "set probe.lockCheck")
			}},
			want: map[string]float64{},
		},
		"the backend deleted": {
			steps: []func(*backendsv1alpha1.HttpBackend){
				probed(metav1.ConditionTrue, backendsv1alpha1.ReachableReason), heldUnder(stale),
				func(b *backendsv1alpha1.HttpBackend) { m.forgetBackend(kind, ns, b.Name) },
			},
			want: map[string]float64{},
		},
		"a RemoteState of the same name deleted": {
			steps: []func(*backendsv1alpha1.HttpBackend){
				probed(metav1.ConditionTrue, backendsv1alpha1.ReachableReason), heldUnder(stale),
				func(b *backendsv1alpha1.HttpBackend) {
					m.remoteStateRefresh.forget(types.NamespacedName{Namespace: ns, Name: b.Name})
				},
			},
			want: map[string]float64{
				reachableMetric + "{kind=HttpBackend,name=web}":  1,
				staleAfterMetric + "{kind=HttpBackend,name=web}": 7200,
				lockHeldMetric + "{kind=HttpBackend,name=web}":   1,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m = newOperatorMetrics(clock.RealClock{})
			b := builders.MakeHttpBackend("web", ns, "").UID("uid-web").Generation(1).Obj()
			for _, step := range tc.steps {
				step(b)
			}
			if diff := cmp.Diff(tc.want, seriesOf(t, m, ns, names...)); diff != "" {
				t.Errorf("series (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMetricsAreDocumented checks that docs/monitoring.md names every
// metric of this package, with each of its labels.
func TestMetricsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "monitoring.md"))
	if err != nil {
		t.Fatalf("reading docs/monitoring.md: %v", err)
	}
	descs := make(chan *prometheus.Desc, 64)
	pool := probes.NewPool(1, 1, clock.RealClock{})
	for _, c := range append(newOperatorMetrics(clock.RealClock{}).collectors(), probeCounts(pool)...) {
		c.Describe(descs)
	}
	close(descs)
	described := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	count := 0
	for d := range descs {
		m := described.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read the name and labels of %s", d)
		}
		count++
		row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(m[1]) + "` \\|.*$").Find(doc)
		if row == nil {
			t.Errorf("docs/monitoring.md has no row for %s", m[1])
			continue
		}
		for label := range strings.SplitSeq(m[2], ",") {
			if label == "" {
				continue // a series without labels
			}
			if !strings.Contains(string(row), "`"+label+"`") {
				t.Errorf("the row of %s in docs/monitoring.md does not name its label %s: %s", m[1], label, row)
			}
		}
	}
	if count != 13 {
		t.Errorf("described %d metrics, want 13", count)
	}
}

// TestProbeCounts checks that the probe queue's series read the pool at
// each scrape.
func TestProbeCounts(t *testing.T) {
	pool := probes.NewPool(2, 2, clock.RealClock{}) // not started: what is submitted waits
	reg := prometheus.NewPedanticRegistry()
	if err := registerReplacing(reg, probeCounts(pool)...); err != nil {
		t.Fatal(err)
	}
	read := func() map[string]float64 {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, f := range families {
			got[f.GetName()] = f.GetMetric()[0].GetGauge().GetValue()
		}
		return got
	}
	if diff := cmp.Diff(map[string]float64{"infrastate_probes_queued": 0, "infrastate_probes_running": 0}, read()); diff != "" {
		t.Errorf("series with no probe (-want +got):\n%s", diff)
	}
	for _, name := range []string{"a", "b", "c"} {
		key := probes.Key{Kind: backendsv1alpha1.HttpBackendKind, NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
		pool.Submit(key, "in", 0, func(context.Context) any { return nil }, func(context.Context) {})
	}
	if diff := cmp.Diff(map[string]float64{"infrastate_probes_queued": 3, "infrastate_probes_running": 0}, read()); diff != "" {
		t.Errorf("series with three probes queued (-want +got):\n%s", diff)
	}
	// Registering again, as the next manager of the process does, replaces
	// the series rather than failing.
	if err := registerReplacing(reg, probeCounts(probes.NewPool(2, 2, clock.RealClock{}))...); err != nil {
		t.Fatalf("registering the series again: %v", err)
	}
	if diff := cmp.Diff(map[string]float64{"infrastate_probes_queued": 0, "infrastate_probes_running": 0}, read()); diff != "" {
		t.Errorf("series after registering another pool's (-want +got):\n%s", diff)
	}
}
