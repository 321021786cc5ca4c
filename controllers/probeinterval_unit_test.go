package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

func TestProbeInterval(t *testing.T) {
	const def = 7 * time.Minute
	d := func(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }
	cases := map[string]struct {
		probe *backendsv1alpha1.ProbeSpec
		want  time.Duration
	}{
		"nil probe":    {want: def},
		"nil interval": {probe: &backendsv1alpha1.ProbeSpec{}, want: def},
		"0s":           {probe: &backendsv1alpha1.ProbeSpec{Interval: d(0)}, want: 0},
		"set":          {probe: &backendsv1alpha1.ProbeSpec{Interval: d(30 * time.Second)}, want: 30 * time.Second},
		"deprecated RemoteState interval": {
			probe: (&backendsv1alpha1.RemoteStateSpec{Interval: d(time.Hour)}).EffectiveProbe(), //nolint:staticcheck // SA1019: tests the deprecated alias
			want:  time.Hour,
		},
		"deprecated RemoteState interval beside a probe without one": {
			probe: (&backendsv1alpha1.RemoteStateSpec{Interval: d(time.Hour), Probe: &backendsv1alpha1.ProbeSpec{}}).EffectiveProbe(), //nolint:staticcheck // SA1019: tests the deprecated alias
			want:  time.Hour,
		},
		"RemoteState probe.interval wins over the deprecated one": {
			probe: (&backendsv1alpha1.RemoteStateSpec{Interval: d(time.Hour), Probe: &backendsv1alpha1.ProbeSpec{Interval: d(0)}}).EffectiveProbe(), //nolint:staticcheck // SA1019: tests the deprecated alias
			want:  0,
		},
		"RemoteState without either": {
			probe: (&backendsv1alpha1.RemoteStateSpec{}).EffectiveProbe(),
			want:  def,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := probeInterval(tc.probe, def); got != tc.want {
				t.Errorf("probeInterval() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDefaultProbeIntervalOption(t *testing.T) {
	cases := map[string]struct {
		opts []Option
		want time.Duration
	}{
		"unset":  {want: DefaultProbeInterval},
		"option": {opts: []Option{WithDefaultProbeInterval(time.Hour)}, want: time.Hour},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := newOptions(tc.opts)
			if o.defaultProbeInterval != tc.want {
				t.Errorf("defaultProbeInterval = %v, want %v", o.defaultProbeInterval, tc.want)
			}
			b := &backendsv1alpha1.HttpBackend{}
			if got := probeInterval(httpKind{}.probeSpec(b), o.defaultProbeInterval); got != tc.want {
				t.Errorf("probeInterval() of a backend without probe = %v, want %v", got, tc.want)
			}
		})
	}
}
