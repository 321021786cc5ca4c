package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics of the probes, registered with controller-runtime's registry so
// that they are served beside its own on the manager's metrics endpoint.
var (
	probeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "infrastate_backend_probe_duration_seconds",
		Help:    "Duration of backend probes, by kind and result (the condition reason).",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	}, []string{"kind", "result"})

	lockHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "infrastate_backend_lock_held",
		Help: "1 while the last probe saw the state locked, 0 otherwise.",
	}, []string{"kind", "namespace", "name"})

	stateSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "infrastate_backend_state_size_bytes",
		Help: "Size of the state the last probe read, in bytes.",
	}, []string{"kind", "namespace", "name"})
)

func init() {
	metrics.Registry.MustRegister(probeDuration, lockHeld, stateSize)
}

// forgetMetrics removes the series of a deleted backend.
func forgetMetrics(kind, namespace, name string) {
	lockHeld.DeleteLabelValues(kind, namespace, name)
	stateSize.DeleteLabelValues(kind, namespace, name)
}
