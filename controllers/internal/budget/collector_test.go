package budget

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"
)

// gathered is every series reg serves, as name{label=value,...}: value.
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}

func TestCollector(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0))
	memory := New(Config{Name: "read memory", Unit: Bytes, PerNamespace: 100, Total: 300}, clk)
	cpu := New(Config{Name: "key derivation CPU", Unit: Nanoseconds, PerNamespace: int64(6 * time.Second), Window: time.Minute}, clk)
	if err := memory.TryTake("team-a", 60); err != nil {
		t.Fatal(err)
	}
	if err := memory.TryTake("team-b", 10); err != nil {
		t.Fatal(err)
	}
	memory.Give("team-b", 10) // no series for a namespace that uses nothing
	cpu.Charge("team-a", int64(1500*time.Millisecond))

	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(NewCollector(memory, cpu)); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"infrastate_budget_limit{budget=key_derivation_cpu,scope=namespace}": 6,
		"infrastate_budget_limit{budget=read_memory,scope=namespace}":        100,
		"infrastate_budget_limit{budget=read_memory,scope=total}":            300,
		"infrastate_budget_used{budget=key_derivation_cpu,namespace=team-a}": 1.5,
		"infrastate_budget_used{budget=read_memory,namespace=team-a}":        60,
	}
	if diff := cmp.Diff(want, gathered(t, reg)); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
}
