package controllers

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// backendGauge is a gauge with a series per backend, labelled kind,
// namespace and name, used as a GaugeVec is (WithLabelValues(...).Set,
// DeleteLabelValues) and served the same way, for a fraction of the
// memory: a GaugeVec keeps, for each series, a metric with its label
// pairs and hashes, about 540 bytes; this keeps a map entry, about 90,
// whose label values are the backend's own strings. The manager serves two
// or more such series per backend.
type backendGauge struct {
	desc *prometheus.Desc

	mu     sync.Mutex
	values map[backendSeriesKey]float64
}

// backendSeriesKey names one backend's series.
type backendSeriesKey struct {
	kind, namespace, name string
}

// newBackendGauge returns the gauge name, with help, of no backend.
func newBackendGauge(name, help string) *backendGauge {
	return &backendGauge{
		desc:   prometheus.NewDesc(name, help, []string{"kind", "namespace", "name"}, nil),
		values: map[backendSeriesKey]float64{},
	}
}

// backendSeries is one backend's series of a backendGauge.
type backendSeries struct {
	g   *backendGauge
	key backendSeriesKey
}

// WithLabelValues returns the series of a backend, which exists once Set.
func (g *backendGauge) WithLabelValues(kind, namespace, name string) backendSeries {
	return backendSeries{g: g, key: backendSeriesKey{kind: kind, namespace: namespace, name: name}}
}

// Set sets the series to v.
func (s backendSeries) Set(v float64) {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	s.g.values[s.key] = v
}

// DeleteLabelValues removes a backend's series, and reports whether it
// existed.
func (g *backendGauge) DeleteLabelValues(kind, namespace, name string) bool {
	key := backendSeriesKey{kind: kind, namespace: namespace, name: name}
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.values[key]
	delete(g.values, key)
	return ok
}

// Describe implements prometheus.Collector.
func (g *backendGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector: one series per backend set.
func (g *backendGauge) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	series := make([]prometheus.Metric, 0, len(g.values))
	for k, v := range g.values {
		series = append(series, prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, k.kind, k.namespace, k.name))
	}
	g.mu.Unlock()
	for _, m := range series {
		ch <- m
	}
}
