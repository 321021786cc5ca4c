package controllers

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// TestBackendGauge checks that a backendGauge serves what a GaugeVec of
// the same name, help and labels serves after the same calls: the same
// exposition, byte for byte, and the same answers to DeleteLabelValues.
func TestBackendGauge(t *testing.T) {
	type call struct {
		del                   bool
		kind, namespace, name string
		value                 float64
	}
	set := func(kind, ns, name string, v float64) call {
		return call{kind: kind, namespace: ns, name: name, value: v}
	}
	del := func(kind, ns, name string) call { return call{del: true, kind: kind, namespace: ns, name: name} }
	cases := map[string][]call{
		"no series":                   nil,
		"one series":                  {set("HttpBackend", "team-a", "web", 1)},
		"a series set twice":          {set("HttpBackend", "team-a", "web", 1), set("HttpBackend", "team-a", "web", 0)},
		"series of two backends":      {set("HttpBackend", "team-a", "web", 1), set("CosBackend", "team-a", "web", 2), set("HttpBackend", "team-b", "web", 3)},
		"a series deleted":            {set("HttpBackend", "team-a", "web", 1), set("HttpBackend", "team-a", "api", 2), del("HttpBackend", "team-a", "web")},
		"a series never set, deleted": {del("HttpBackend", "team-a", "web")},
	}
	const name, help = "infrastate_test_value", "A value, per backend."
	for caseName, calls := range cases {
		t.Run(caseName, func(t *testing.T) {
			want := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"kind", "namespace", "name"})
			got := newBackendGauge(name, help)
			for i, c := range calls {
				if !c.del {
					want.WithLabelValues(c.kind, c.namespace, c.name).Set(c.value)
					got.WithLabelValues(c.kind, c.namespace, c.name).Set(c.value)
					continue
				}
				if w, g := want.DeleteLabelValues(c.kind, c.namespace, c.name), got.DeleteLabelValues(c.kind, c.namespace, c.name); w != g {
					t.Errorf("call %d: DeleteLabelValues = %v, want %v", i, g, w)
				}
			}
			if diff := cmp.Diff(exposition(t, want), exposition(t, got)); diff != "" {
				t.Errorf("exposition (-GaugeVec +backendGauge):\n%s", diff)
			}
		})
	}
}

// exposition is what a registry of c alone serves, as text.
func exposition(t *testing.T, c prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}
