package controllers

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// The refresh metrics of the RemoteStates: when each last published its
// outputs, and how often it should. An alert compares the two
// (docs/monitoring.md).

// Help texts of the refresh metrics, which docs/monitoring.md repeats.
const (
	lastSuccessHelp = "Unix time the RemoteState last read its state and published its outputs (OutputsReady True). " +
		"An object the manager has not seen succeed since it started counts from its status: the manager's start " +
		"when OutputsReady is True (the status records no time of the read), the time OutputsReady stopped being " +
		"True when it is not, the object's creation when it was never read."
	refreshIntervalHelp = "Seconds between two reads of the RemoteState's state (probe.interval, else the deprecated " +
		"interval, else --default-probe-interval); no series when probe.interval is 0s, which reads only on changes."
)

// refreshCollector serves infrastate_remotestate_last_success_timestamp_seconds
// and infrastate_remotestate_refresh_interval_seconds for each RemoteState
// the manager reconciled, until it is deleted.
type refreshCollector struct {
	lastSuccess, interval *prometheus.Desc

	mu      sync.Mutex
	records map[types.NamespacedName]refreshRecord
}

// refreshRecord is what refreshCollector keeps of one RemoteState.
type refreshRecord struct {
	// lastSuccess is when it last published its outputs (see
	// lastSuccessSeed for an object not seen succeed).
	lastSuccess time.Time
	// interval between two reads; 0 reads only on changes.
	interval time.Duration
}

// newRefreshCollector returns a collector of no RemoteState.
func newRefreshCollector() *refreshCollector {
	labels := []string{"namespace", "name"}
	return &refreshCollector{
		lastSuccess: prometheus.NewDesc("infrastate_remotestate_last_success_timestamp_seconds", lastSuccessHelp, labels, nil),
		interval:    prometheus.NewDesc("infrastate_remotestate_refresh_interval_seconds", refreshIntervalHelp, labels, nil),
		records:     map[types.NamespacedName]refreshRecord{},
	}
}

// observe records the refresh interval of the RemoteState key and, when
// the collector has no record of it yet, its last success as seed
// returns it.
func (c *refreshCollector) observe(key types.NamespacedName, interval time.Duration, seed func() time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.records[key]
	if !ok {
		rec.lastSuccess = seed()
	}
	rec.interval = interval
	c.records[key] = rec
}

// succeeded records that the RemoteState key published its outputs at.
func (c *refreshCollector) succeeded(key types.NamespacedName, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := c.records[key]
	rec.lastSuccess = at
	c.records[key] = rec
}

// forget removes the series of a deleted RemoteState.
func (c *refreshCollector) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.records, key)
}

// Describe implements prometheus.Collector.
func (c *refreshCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lastSuccess
	ch <- c.interval
}

// Collect implements prometheus.Collector: a last success per RemoteState,
// and an interval per RemoteState that reads periodically.
func (c *refreshCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	series := make([]prometheus.Metric, 0, 2*len(c.records))
	for key, rec := range c.records {
		seconds := float64(rec.lastSuccess.UnixNano()) / float64(time.Second)
		series = append(series, prometheus.MustNewConstMetric(c.lastSuccess, prometheus.GaugeValue, seconds, key.Namespace, key.Name))
		if rec.interval > 0 {
			series = append(series, prometheus.MustNewConstMetric(c.interval, prometheus.GaugeValue, rec.interval.Seconds(), key.Namespace, key.Name))
		}
	}
	c.mu.Unlock()
	for _, m := range series {
		ch <- m
	}
}

// lastSuccessSeed is the last success of a RemoteState the manager has not
// seen succeed since it started, as far as its status tells at now. The
// status records no time of a read (it is written only when it changes),
// so:
//   - OutputsReady True: the last read succeeded, at a time the status
//     does not record: now, so that a RemoteState that was fine is not
//     reported as not refreshed after a restart. Its next read is due
//     within an interval.
//   - OutputsReady False or Unknown: the last success, if any, came
//     before the condition's last transition: that time.
//   - no OutputsReady: never read yet (a new object, or one stalled before
//     its first read): its creation, so that one that never succeeds is
//     reported once it has waited as long as one that stopped.
func lastSuccessSeed(remote *backendsv1alpha1.RemoteState, now time.Time) time.Time {
	cond := meta.FindStatusCondition(remote.Status.Conditions, backendsv1alpha1.OutputsReadyCondition)
	switch {
	case cond != nil && cond.Status == metav1.ConditionTrue:
		return now
	case cond != nil && !cond.LastTransitionTime.IsZero():
		return cond.LastTransitionTime.Time
	case !remote.CreationTimestamp.IsZero():
		return remote.CreationTimestamp.Time
	}
	return now
}

// remoteStateInterval is the refresh interval of a RemoteState: its
// effective probe interval, def when it sets none.
func remoteStateInterval(remote *backendsv1alpha1.RemoteState, def time.Duration) time.Duration {
	return probeInterval(remote.Spec.EffectiveProbe(), def)
}
