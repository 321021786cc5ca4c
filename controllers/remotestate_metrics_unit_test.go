package controllers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

func TestLastSuccessSeed(t *testing.T) {
	now := time.Date(2030, time.March, 1, 12, 0, 0, 0, time.UTC)
	created := now.Add(-48 * time.Hour)
	failingSince := now.Add(-3 * time.Hour)
	outputsReady := func(status metav1.ConditionStatus, reason string, since time.Time) []metav1.Condition {
		return []metav1.Condition{
			{Type: backendsv1alpha1.ReadyCondition, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))},
			{Type: backendsv1alpha1.OutputsReadyCondition, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(since)},
		}
	}
	cases := map[string]struct {
		conditions []metav1.Condition
		created    time.Time
		want       time.Time
	}{
		"published: the time the status does not record is taken as now": {
			conditions: outputsReady(metav1.ConditionTrue, backendsv1alpha1.OutputsPublishedReason, created), created: created, want: now,
		},
		"failing: the last success came before the failure": {
			conditions: outputsReady(metav1.ConditionFalse, backendsv1alpha1.UnreachableReason, failingSince), created: created, want: failingSince,
		},
		"unknown: as failing": {
			conditions: outputsReady(metav1.ConditionUnknown, backendsv1alpha1.AssumeRoleNotSupportedReason, failingSince), created: created, want: failingSince,
		},
		"never read (stalled): its creation": {
			conditions: []metav1.Condition{{Type: backendsv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: backendsv1alpha1.BackendNotFoundReason}},
			created:    created, want: created,
		},
		"new: its creation":             {created: created, want: created},
		"no creation time (not stored)": {want: now},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rs := &backendsv1alpha1.RemoteState{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(tc.created)}}
			rs.Status.Conditions = tc.conditions
			if got := lastSuccessSeed(rs, now); !got.Equal(tc.want) {
				t.Errorf("lastSuccessSeed = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestRefreshCollector checks the series of the refresh collector through
// a registry, as a scrape reads them: the seed counts only for an object
// it has no record of, a success replaces it, an interval of 0 has no
// series, and a forgotten object has none at all.
func TestRefreshCollector(t *testing.T) {
	const ns = "team-a"
	epoch := time.Date(2030, time.March, 1, 12, 0, 0, 0, time.UTC)
	network := types.NamespacedName{Namespace: ns, Name: "network"}
	dns := types.NamespacedName{Namespace: ns, Name: "dns"}
	seedAt := func(at time.Time) func() time.Time { return func() time.Time { return at } }
	unix := func(at time.Time) float64 { return float64(at.Unix()) }
	lastSuccess := func(name string) string { return lastSuccessMetric + "{name=" + name + "}" }
	interval := func(name string) string { return intervalMetric + "{name=" + name + "}" }

	cases := map[string]struct {
		steps func(c *refreshCollector)
		want  map[string]float64
	}{
		"first sight: the seed and the interval": {
			steps: func(c *refreshCollector) { c.observe(network, 5*time.Minute, seedAt(epoch)) },
			want:  map[string]float64{lastSuccess("network"): unix(epoch), interval("network"): 300},
		},
		"seen again: the seed no longer counts, the interval follows the spec": {
			steps: func(c *refreshCollector) {
				c.observe(network, 5*time.Minute, seedAt(epoch))
				c.observe(network, time.Hour, seedAt(epoch.Add(time.Hour)))
			},
			want: map[string]float64{lastSuccess("network"): unix(epoch), interval("network"): 3600},
		},
		"a success": {
			steps: func(c *refreshCollector) {
				c.observe(network, 5*time.Minute, seedAt(epoch))
				c.succeeded(network, epoch.Add(10*time.Minute))
				c.observe(network, 5*time.Minute, seedAt(epoch))
			},
			want: map[string]float64{lastSuccess("network"): unix(epoch.Add(10 * time.Minute)), interval("network"): 300},
		},
		"reads only on changes: no interval": {
			steps: func(c *refreshCollector) { c.observe(network, 0, seedAt(epoch)) },
			want:  map[string]float64{lastSuccess("network"): unix(epoch)},
		},
		"deleted": {
			steps: func(c *refreshCollector) {
				c.observe(network, 5*time.Minute, seedAt(epoch))
				c.observe(dns, time.Minute, seedAt(epoch))
				c.forget(network)
			},
			want: map[string]float64{lastSuccess("dns"): unix(epoch), interval("dns"): 60},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newRefreshCollector()
			registry := prometheus.NewPedanticRegistry()
			registry.MustRegister(c)
			tc.steps(c)
			if diff := cmp.Diff(tc.want, gatherFrom(t, registry, ns, lastSuccessMetric, intervalMetric)); diff != "" {
				t.Errorf("series (-want +got):\n%s", diff)
			}
		})
	}
}

// TestForgetMetricsOfARemoteState checks that deleting a RemoteState
// removes its series from the manager's series, and that deleting a
// backend of the same name does not: each reconciler forgets its own
// kind's series.
func TestForgetMetricsOfARemoteState(t *testing.T) {
	const ns = "refresh-test"
	m := newOperatorMetrics(clock.RealClock{})
	key := types.NamespacedName{Namespace: ns, Name: "network"}
	at := time.Date(2030, time.March, 1, 12, 0, 0, 0, time.UTC)
	m.remoteStateRefresh.observe(key, time.Minute, func() time.Time { return at })
	want := map[string]float64{lastSuccessMetric + "{name=network}": float64(at.Unix()), intervalMetric + "{name=network}": 60}

	newBackendReconciler(httpKind{}, nil, nil, nil, withMetrics(m)).forgetMetrics(key)
	if diff := cmp.Diff(want, seriesOf(t, m, ns, lastSuccessMetric, intervalMetric)); diff != "" {
		t.Errorf("series after an HttpBackend of the same name was deleted (-want +got):\n%s", diff)
	}
	newRemoteStateReconciler(nil, nil, nil, withMetrics(m)).forgetMetrics(key)
	if diff := cmp.Diff(map[string]float64{}, seriesOf(t, m, ns, lastSuccessMetric, intervalMetric)); diff != "" {
		t.Errorf("series after the RemoteState was deleted (-want +got):\n%s", diff)
	}
}
