package controllers

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
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
	// seen are the histories whose series were seeded from status.
	seen *seenHistories
}

// seenHistories is a set of histories, shared by the copies of
// historyMetrics.
type seenHistories struct {
	mu   sync.Mutex
	keys map[types.NamespacedName]bool
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
		seen: &seenHistories{keys: map[types.NamespacedName]bool{}},
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

// seedHistory serves, for a history the manager has served nothing of
// since it started, what its status says: the snapshots listed, and when
// its newest state was last seen kept if its last read kept it. The series
// of a history are then continuous across a restart, until its first read.
func (m *operatorMetrics) seedHistory(key types.NamespacedName, status backendsv1alpha1.StateHistoryStatus) {
	if !m.history.firstSight(key) {
		return
	}
	m.history.snapshots.WithLabelValues(key.Namespace, key.Name).Set(float64(status.SnapshotCount))
	if c := meta.FindStatusCondition(status.Conditions, backendsv1alpha1.SnapshotsReadyCondition); c != nil && c.Status == metav1.ConditionTrue && status.LastReadTime != nil {
		m.history.keptAt.WithLabelValues(key.Namespace, key.Name).Set(float64(status.LastReadTime.Unix()))
	}
}

// firstSight reports whether key is a history the series were not seeded
// for yet, and records it.
func (m historyMetrics) firstSight(key types.NamespacedName) bool {
	m.seen.mu.Lock()
	defer m.seen.mu.Unlock()
	if m.seen.keys[key] {
		return false
	}
	m.seen.keys[key] = true
	return true
}

// forgetHistory removes the series of a deleted history.
func (m *operatorMetrics) forgetHistory(key types.NamespacedName) {
	labels := prometheus.Labels{"namespace": key.Namespace, "name": key.Name}
	m.history.snapshots.DeletePartialMatch(labels)
	m.history.keptAt.DeletePartialMatch(labels)
	m.history.failures.DeletePartialMatch(labels)
	m.history.seen.mu.Lock()
	delete(m.history.seen.keys, key)
	m.history.seen.mu.Unlock()
}
