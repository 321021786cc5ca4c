package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metric families the harness reads.
const (
	// apiRequestsMetric is the API server's count of requests by verb,
	// resource, subresource and code.
	apiRequestsMetric = "apiserver_request_total"
	// reconcileMetric is controller-runtime's count of reconciles by
	// controller and result.
	reconcileMetric = "controller_runtime_reconcile_total"
	// queueDepthMetric is controller-runtime's count of queued items that
	// are ready for a worker, by queue name and priority.
	queueDepthMetric = "workqueue_depth"
)

// parseFamilies parses the Prometheus text exposition format, keeping
// only the families named: the API server serves several megabytes of
// histograms the harness does not need, so the other lines are dropped
// before parsing.
func parseFamilies(r io.Reader, names ...string) (map[string]*dto.MetricFamily, error) {
	var kept bytes.Buffer
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 4<<20)
	for s.Scan() {
		line := s.Text()
		if keepLine(line, names) {
			kept.WriteString(line)
			kept.WriteByte('\n')
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("reading metrics: %w", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(&kept)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return families, nil
}

// keepLine reports whether a line of the text format belongs to one of
// the families named: its sample ("name{...} v" or "name v"; a
// histogram's "name_bucket", "name_sum" and "name_count") or its HELP and
// TYPE comments.
func keepLine(line string, names []string) bool {
	rest, comment := line, false
	if c, ok := strings.CutPrefix(line, "# HELP "); ok {
		rest, comment = c, true
	} else if c, ok := strings.CutPrefix(line, "# TYPE "); ok {
		rest, comment = c, true
	}
	for _, n := range names {
		after, ok := strings.CutPrefix(rest, n)
		if !ok {
			continue
		}
		if !comment {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if a, ok := strings.CutPrefix(after, suffix); ok {
					after = a
					break
				}
			}
		}
		if after == "" || after[0] == '{' || after[0] == ' ' {
			return true
		}
	}
	return false
}

// labelsOf returns the labels of a sample as a map.
func labelsOf(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// sampleValue is the value of a counter, gauge or untyped sample.
func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// sumWhere sums the samples of family name whose labels include every
// label of match.
func sumWhere(families map[string]*dto.MetricFamily, name string, match map[string]string) float64 {
	var sum float64
	for _, m := range families[name].GetMetric() {
		if labelsMatch(m, match) {
			sum += sampleValue(m)
		}
	}
	return sum
}

// labelsMatch reports whether m's labels include every label of match.
func labelsMatch(m *dto.Metric, match map[string]string) bool {
	labels := labelsOf(m)
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// requestCountsFrom reads the API server's apiserver_request_total
// samples as request counts. Samples without a resource (/metrics,
// /healthz, discovery) are left out.
func requestCountsFrom(families map[string]*dto.MetricFamily) requestCounts {
	out := requestCounts{}
	for _, m := range families[apiRequestsMetric].GetMetric() {
		l := labelsOf(m)
		if l["resource"] == "" {
			continue
		}
		k := requestKey{Verb: l["verb"], Resource: l["resource"], Subresource: l["subresource"], Code: l["code"]}
		out[k] += int64(sampleValue(m))
	}
	return out
}

// reconcileProgress is what the manager's metrics say of one controller.
type reconcileProgress struct {
	// reconciles is the number of reconciles it finished, whatever their
	// result.
	reconciles int64
	// depth is the number of queued items ready for a worker.
	depth int64
}

// reconcileProgressFrom reads controller's reconcile count and queue
// depth from the manager's metrics.
func reconcileProgressFrom(families map[string]*dto.MetricFamily, controller string) reconcileProgress {
	return reconcileProgress{
		reconciles: int64(sumWhere(families, reconcileMetric, map[string]string{"controller": controller})),
		depth:      int64(sumWhere(families, queueDepthMetric, map[string]string{"name": controller})),
	}
}
