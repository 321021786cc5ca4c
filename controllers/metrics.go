package controllers

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/infrastate/backend-operator/controllers/internal/probes"
)

// operatorMetrics are the series one manager serves beside
// controller-runtime's own on its metrics endpoint: SetupAll makes them and
// registers them (see register); a reconciler made without SetupAll keeps
// a set of its own that no registry serves (tests read it directly).
type operatorMetrics struct {
	probeDuration *prometheus.HistogramVec
	// The series of each backend (see backendGauge).
	lockHeld  *backendGauge
	stateSize *backendGauge
	lockAges  *lockAgeCollector
	// backendReachable is decided by reachableValue (metrics_status.go).
	backendReachable *backendGauge
	lockStaleAfter   *backendGauge
	// remoteStateRefresh serves the RemoteStates' refresh series.
	remoteStateRefresh *refreshCollector
	// history serves the StateHistories' series.
	history historyMetrics
}

// newOperatorMetrics returns series of no object, counting lock ages to
// clk's time.
func newOperatorMetrics(clk clock.PassiveClock) *operatorMetrics {
	return &operatorMetrics{
		probeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "infrastate_backend_probe_duration_seconds",
			Help:    "Duration of backend probes, by kind and result (the condition reason).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"kind", "result"}),
		lockHeld: newBackendGauge("infrastate_backend_lock_held",
			"1 while the last probe saw the state locked, 0 otherwise."),
		stateSize: newBackendGauge("infrastate_backend_state_size_bytes",
			"Size of the state the last probe read, in bytes."),
		lockAges: newLockAgeCollector(clk.Now),
		backendReachable: newBackendGauge("infrastate_backend_reachable",
			"1 when the last probe reached the backend's state: it answered the read with a state (even one that "+
				"cannot be used: StateUnreadable, DecryptionFailed, BudgetExceeded, StateNotEncrypted) or with none yet (HTTP 404 or 204, "+
				"no state object); 0 when it did not (StateReachable or BucketReady False for any other reason). "+
				"No series while probing is disabled."),
		lockStaleAfter: newBackendGauge("infrastate_backend_lock_stale_after_seconds",
			"spec.lockPolicy.staleAfter of a backend whose lock the probe checks; no series when it is unset. "+
				"Compare with infrastate_state_lock_age_seconds on kind, namespace and name."),
		remoteStateRefresh: newRefreshCollector(),
		history:            newHistoryMetrics(),
	}
}

// register has reg serve the series. A set registered before under the
// same names (an earlier manager of the same process, as the tests start
// one per spec) is replaced.
func (m *operatorMetrics) register(reg prometheus.Registerer) error {
	return registerReplacing(reg, m.collectors()...)
}

// probeCounts are the series of pool's probes queued and running: a
// queue that grows says that the probes due outnumber what
// --max-concurrent-probes runs, and each waiting probe holds its settings
// until it runs.
func probeCounts(pool *probes.Pool) []prometheus.Collector {
	count := func(name, help string, pick func(queued, running int) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			return float64(pick(pool.Counts()))
		})
	}
	return []prometheus.Collector{
		count("infrastate_probes_queued", "Probes of every kind waiting for a slot, their namespace's bound or its read memory share.",
			func(queued, _ int) int { return queued }),
		count("infrastate_probes_running", "Probes of every kind running, at most --max-concurrent-probes.",
			func(_, running int) int { return running }),
	}
}

// registerReplacing has reg serve collectors, replacing any registered
// before under the same names (an earlier manager of the same process, as
// the tests start one per spec).
func registerReplacing(reg prometheus.Registerer, collectors ...prometheus.Collector) error {
	for _, c := range collectors {
		reg.Unregister(c)
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering the operator's metrics: %w", err)
		}
	}
	return nil
}

// collectors are the collectors of the series.
func (m *operatorMetrics) collectors() []prometheus.Collector {
	return append([]prometheus.Collector{m.probeDuration, m.lockHeld, m.stateSize, m.lockAges, m.backendReachable, m.lockStaleAfter, m.remoteStateRefresh},
		m.history.collectors()...)
}

// forgetBackend removes the series of a deleted backend of kind.
func (m *operatorMetrics) forgetBackend(kind, namespace, name string) {
	m.lockHeld.DeleteLabelValues(kind, namespace, name)
	m.stateSize.DeleteLabelValues(kind, namespace, name)
	m.lockAges.forget(kind, namespace, name)
	m.backendReachable.DeleteLabelValues(kind, namespace, name)
	m.lockStaleAfter.DeleteLabelValues(kind, namespace, name)
}

// lockAgeCollector serves infrastate_state_lock_age_seconds: the age of
// the lock each backend's last probe saw held, from its holder's Created.
// It keeps Created and computes the age when scraped, so that the age is
// exact at any scrape between two probes (a gauge set by each probe
// would be up to a probe interval behind) and no probe has to write a
// series that only moves with the clock.
type lockAgeCollector struct {
	desc *prometheus.Desc
	// now is the clock the ages are counted to.
	now func() time.Time

	mu      sync.Mutex
	created map[lockAgeKey]time.Time
}

// lockAgeKey names one backend's series.
type lockAgeKey struct {
	kind, namespace, name string
}

// newLockAgeCollector returns a collector of no lock, counting ages to
// now.
func newLockAgeCollector(now func() time.Time) *lockAgeCollector {
	return &lockAgeCollector{
		desc: prometheus.NewDesc("infrastate_state_lock_age_seconds",
			"Age of the state lock the last probe saw held, from its holder's Created, at the time of the scrape.",
			[]string{"kind", "namespace", "name"}, nil),
		now:     now,
		created: map[lockAgeKey]time.Time{},
	}
}

// set records that the lock of a backend was taken at created.
func (c *lockAgeCollector) set(kind, namespace, name string, created time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.created[lockAgeKey{kind, namespace, name}] = created
}

// forget removes a backend's series: it holds no lock, or its holder did
// not record when it took it, or the backend is gone.
func (c *lockAgeCollector) forget(kind, namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.created, lockAgeKey{kind, namespace, name})
}

// Describe implements prometheus.Collector.
func (c *lockAgeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector: one series per held lock, its
// age at now (0 for a Created ahead of the clock).
func (c *lockAgeCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	c.mu.Lock()
	series := make([]prometheus.Metric, 0, len(c.created))
	for k, created := range c.created {
		age := max(now.Sub(created), 0)
		series = append(series, prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, age.Seconds(), k.kind, k.namespace, k.name))
	}
	c.mu.Unlock()
	for _, m := range series {
		ch <- m
	}
}
