package chart

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// This file evaluates the chart's alerts as Prometheus does, in the
// spirit of `promtool test rules`: series written in promtool's notation
// (`metric{label="v"} 0+1x10 _ stale`) are kept in memory, Prometheus'
// own PromQL engine evaluates each rule's expr over them at every
// evaluation of the rule group, and the alerts' pending and firing states
// follow from the rule's for as in Prometheus' rule manager. The engine
// runs over a small in-memory storage rather than promqltest's, whose
// TSDB would bring in every cloud SDK Prometheus' configuration knows.

// lookbackDelta is Prometheus' default: how long an instant selector
// still sees a series after its last sample (unless a staleness marker
// ends it).
const lookbackDelta = 5 * time.Minute

// seriesStore is an in-memory storage.Queryable of float series.
type seriesStore []storage.Series

// loadSeries parses series in promtool's notation, one per line, with a
// sample every scrape interval from time 0 on (`_` skips one, `stale`
// writes a staleness marker, as Prometheus does when a series or its
// target goes away).
func loadSeries(t *testing.T, scrape time.Duration, text string) seriesStore {
	t.Helper()
	var out seriesStore
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		lset, values, err := parser.ParseSeriesDesc(line)
		if err != nil {
			t.Fatalf("parsing series %q: %v", line, err)
		}
		var samples []chunks.Sample
		for i, v := range values {
			if !v.Omitted {
				samples = append(samples, floatSample{t: int64(i) * scrape.Milliseconds(), f: v.Value})
			}
		}
		out = append(out, storage.NewListSeries(lset, samples))
	}
	return out
}

// Querier implements storage.Queryable.
func (s seriesStore) Querier(_, _ int64) (storage.Querier, error) { return s, nil }

// Select returns the series that match every matcher.
func (s seriesStore) Select(_ context.Context, sortSeries bool, _ *storage.SelectHints, matchers ...*labels.Matcher) storage.SeriesSet {
	var out []storage.Series
	for _, series := range s {
		lset := series.Labels()
		if !slices.ContainsFunc(matchers, func(m *labels.Matcher) bool { return !m.Matches(lset.Get(m.Name)) }) {
			out = append(out, series)
		}
	}
	if sortSeries {
		slices.SortFunc(out, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
	}
	return &seriesSet{series: out, next: -1}
}

// LabelValues is not used by the engine for these queries.
func (seriesStore) LabelValues(context.Context, string, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

// LabelNames is not used by the engine for these queries.
func (seriesStore) LabelNames(context.Context, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

// Close implements storage.Querier.
func (seriesStore) Close() error { return nil }

// seriesSet iterates over a slice of series.
type seriesSet struct {
	series []storage.Series
	next   int
}

// Next implements storage.SeriesSet.
func (s *seriesSet) Next() bool { s.next++; return s.next < len(s.series) }

// At implements storage.SeriesSet.
func (s *seriesSet) At() storage.Series { return s.series[s.next] }

// Err implements storage.SeriesSet.
func (*seriesSet) Err() error { return nil }

// Warnings implements storage.SeriesSet.
func (*seriesSet) Warnings() annotations.Annotations { return nil }

// floatSample is one float sample of a series.
type floatSample struct {
	t int64
	f float64
}

// T implements chunks.Sample.
func (s floatSample) T() int64 { return s.t }

// ST implements chunks.Sample: the series have no start timestamps.
func (floatSample) ST() int64 { return 0 }

// F implements chunks.Sample.
func (s floatSample) F() float64 { return s.f }

// H implements chunks.Sample.
func (floatSample) H() *histogram.Histogram { return nil }

// FH implements chunks.Sample.
func (floatSample) FH() *histogram.FloatHistogram { return nil }

// Type implements chunks.Sample.
func (floatSample) Type() chunkenc.ValueType { return chunkenc.ValFloat }

// Copy implements chunks.Sample.
func (s floatSample) Copy() chunks.Sample { return s }

// newEngine returns a PromQL engine with Prometheus' default lookback.
func newEngine() *promql.Engine {
	return promql.NewEngine(promql.EngineOpts{MaxSamples: 1_000_000, Timeout: time.Minute, LookbackDelta: lookbackDelta})
}

// evalInstant evaluates expr over store at time at (from time 0) and
// returns its samples, or the engine's error.
func evalInstant(t *testing.T, engine *promql.Engine, store seriesStore, expr string, at time.Duration) (promql.Vector, error) {
	t.Helper()
	query, err := engine.NewInstantQuery(t.Context(), store, nil, expr, time.Unix(0, 0).Add(at))
	if err != nil {
		return nil, fmt.Errorf("parsing %q: %w", expr, err)
	}
	defer query.Close()
	return query.Exec(t.Context()).Vector()
}

// alertStates evaluates an alerting rule over store every interval from 0
// to end, as Prometheus' rule manager does, and returns the alerts at each
// of the checkpoints: "firing" or "pending" and their labels (the
// series' labels without the metric name, with the rule's labels over
// them). A series that comes back after a gap, or with other labels,
// starts a new alert that waits its for again. It fails the test on an
// evaluation error or on two series with the same labels once the rule's
// labels are applied, which Prometheus refuses too.
func alertStates(t *testing.T, rule alertingRule, store seriesStore, interval, end time.Duration, checkpoints ...time.Duration) map[time.Duration][]string {
	t.Helper()
	hold, err := model.ParseDuration(rule.For)
	if err != nil {
		t.Fatalf("%s: for %q: %v", rule.Alert, rule.For, err)
	}
	engine := newEngine()
	activeSince := map[string]time.Duration{}
	out := map[time.Duration][]string{}
	for at := time.Duration(0); at <= end; at += interval {
		vector, err := evalInstant(t, engine, store, rule.Expr, at)
		if err != nil {
			t.Fatalf("%s at %v: %v", rule.Alert, at, err)
		}
		seen := map[string]time.Duration{}
		for _, sample := range vector {
			b := labels.NewBuilder(sample.Metric).Del(model.MetricNameLabel)
			for k, v := range rule.Labels {
				b.Set(k, v)
			}
			key := b.Labels().String()
			if _, dup := seen[key]; dup {
				t.Fatalf("%s at %v: two series with the labels %s once the rule's labels are applied", rule.Alert, at, key)
			}
			since, ok := activeSince[key]
			if !ok {
				since = at
			}
			seen[key] = since
		}
		activeSince = seen
		if !slices.Contains(checkpoints, at) {
			continue
		}
		states := []string{}
		for key, since := range activeSince {
			state := "pending"
			if at-since >= time.Duration(hold) {
				state = "firing"
			}
			states = append(states, state+" "+key)
		}
		slices.Sort(states)
		out[at] = states
	}
	return out
}
