package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
)

// historyMetrics are the StateHistories' series.
type historyMetrics struct {
	// snapshots is how many snapshots each history's prefix holds.
	snapshots *prometheus.GaugeVec
	// keptAt is when each history last saw its source's newest state
	// kept: its age is how far behind the history may be.
	keptAt *prometheus.GaugeVec
	// failures counts the reads that kept nothing, by reason.
	failures *prometheus.CounterVec
}

func newHistoryMetrics() historyMetrics {
	return historyMetrics{
		snapshots: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "infrastate_statehistory_snapshots",
			Help: "Snapshots a StateHistory's destination prefix holds, as its last read listed them.",
		}, []string{"namespace", "name"}),
		keptAt: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "infrastate_statehistory_newest_kept_timestamp_seconds",
			Help: "When a StateHistory last read its source's state and found it kept (stored then, or before): " +
				"time() minus it is the age of the newest snapshot the history vouches for.",
		}, []string{"namespace", "name"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "infrastate_statehistory_failures_total",
			Help: "Reads of a StateHistory that kept nothing, by reason (the SnapshotsReady reason).",
		}, []string{"namespace", "name", "reason"}),
	}
}

func (m historyMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.snapshots, m.keptAt, m.failures}
}

// observeHistory records what a read of the history key did.
func (m *operatorMetrics) observeHistory(key types.NamespacedName, status backendsv1alpha1.StateHistoryStatus, obs conditions.Observation) {
	m.history.snapshots.WithLabelValues(key.Namespace, key.Name).Set(float64(status.SnapshotCount))
	switch {
	case obs.Status == metav1.ConditionTrue && status.LastReadTime != nil:
		m.history.keptAt.WithLabelValues(key.Namespace, key.Name).Set(float64(status.LastReadTime.Unix()))
	case obs.Reason != backendsv1alpha1.StateNotFoundReason:
		m.history.failures.WithLabelValues(key.Namespace, key.Name, obs.Reason).Inc()
	}
}

// forgetHistory removes the series of a deleted history.
func (m *operatorMetrics) forgetHistory(key types.NamespacedName) {
	labels := prometheus.Labels{"namespace": key.Namespace, "name": key.Name}
	m.history.snapshots.DeletePartialMatch(labels)
	m.history.keptAt.DeletePartialMatch(labels)
	m.history.failures.DeletePartialMatch(labels)
}
