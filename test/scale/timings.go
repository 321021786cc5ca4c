package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	dto "github.com/prometheus/client_model/go"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// Histogram families the harness reads to say where a scenario's time
// went inside the manager.
const (
	// reconcileTimeMetric is controller-runtime's histogram of reconcile
	// durations, by controller.
	reconcileTimeMetric = "controller_runtime_reconcile_time_seconds"
	// probeDurationMetric is the operator's histogram of backend probe
	// durations, by kind and result.
	probeDurationMetric = "infrastate_backend_probe_duration_seconds"
)

// histogramTotal is the sum and count of the samples of a histogram.
type histogramTotal struct {
	sum   float64
	count uint64
}

// minus is what h observed since before.
func (h histogramTotal) minus(before histogramTotal) histogramTotal {
	return histogramTotal{sum: h.sum - before.sum, count: h.count - before.count}
}

// meanMillis is the mean sample in milliseconds, 0 without samples.
func (h histogramTotal) meanMillis() float64 {
	if h.count == 0 {
		return 0
	}
	return h.sum / float64(h.count) * 1000
}

// durations are the manager's reconcile and probe durations so far, of
// the HttpBackend controller and kind.
type durations struct {
	reconcile, probe histogramTotal
}

// durationsFrom reads controller's reconcile durations and kind's probe
// durations (every result) from the manager's metrics.
func durationsFrom(families map[string]*dto.MetricFamily, controller, kind string) durations {
	return durations{
		reconcile: histogramWhere(families, reconcileTimeMetric, map[string]string{"controller": controller}),
		probe:     histogramWhere(families, probeDurationMetric, map[string]string{"kind": kind}),
	}
}

// histogramWhere sums the histograms of family name whose labels include
// every label of match, as sumWhere sums counters and gauges.
func histogramWhere(families map[string]*dto.MetricFamily, name string, match map[string]string) histogramTotal {
	var total histogramTotal
	for _, m := range families[name].GetMetric() {
		if !labelsMatch(m, match) || m.GetHistogram() == nil {
			continue
		}
		total.sum += m.GetHistogram().GetSampleSum()
		total.count += m.GetHistogram().GetSampleCount()
	}
	return total
}

// durations reads the manager's reconcile and probe durations.
func (m *managerProcess) durations(ctx context.Context) (durations, error) {
	families, err := m.metrics(ctx, reconcileTimeMetric, probeDurationMetric)
	if err != nil {
		return durations{}, err
	}
	return durationsFrom(families, httpBackendController, backendsv1alpha1.HttpBackendKind), nil
}

// durationsNote says how long the HttpBackend reconciles and probes
// between before and after took on average: a reconcile waits for the
// first probe of a new backend (up to the probe grace), so the two side
// by side tell whether the probes or the API requests set the pace.
func durationsNote(before, after durations) string {
	r, p := after.reconcile.minus(before.reconcile), after.probe.minus(before.probe)
	return fmt.Sprintf("mean reconcile %.1f ms (%d), mean probe %.1f ms (%d)", r.meanMillis(), r.count, p.meanMillis(), p.count)
}

// durationsSince is the durations note of m since it had before, or a
// note that they could not be read: a note, not a reason to lose the
// scenario's row.
func durationsSince(ctx context.Context, m *managerProcess, before durations) string {
	after, err := m.durations(ctx)
	if err != nil {
		return "durations unread: " + err.Error()
	}
	return durationsNote(before, after)
}

// workersNote says how long after its process started the manager's
// HttpBackend workers started, as its log says (to the second): the
// part of a cold start spent listing and syncing caches, before any
// backend can be reconciled.
func workersNote(m *managerProcess) string {
	b, err := os.ReadFile(m.logPath)
	if err != nil {
		return "workers' start unread: " + err.Error()
	}
	at, ok := workersStartedAt(b)
	if !ok {
		return "workers' start not logged"
	}
	return fmt.Sprintf("workers started %.0fs after the process (to the second)", at.Sub(m.started.Truncate(time.Second)).Seconds())
}

// workersStartedAt is the time of the manager's log line saying that the
// HttpBackend workers started (see workersLine).
func workersStartedAt(logText []byte) (time.Time, bool) {
	line, ok := workersLine(logText)
	if !ok {
		return time.Time{}, false
	}
	var entry struct {
		TS time.Time `json:"ts"`
	}
	if json.Unmarshal(line, &entry) != nil || entry.TS.IsZero() {
		return time.Time{}, false
	}
	return entry.TS, true
}
