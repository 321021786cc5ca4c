package v1alpha1_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/infrastate/backend-operator/api/v1alpha1"
)

func TestEffectiveProbe(t *testing.T) {
	d := func(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }
	cases := map[string]struct {
		spec v1alpha1.RemoteStateSpec
		want *v1alpha1.ProbeSpec
	}{
		"neither": {},
		"probe without interval": {
			spec: v1alpha1.RemoteStateSpec{Probe: &v1alpha1.ProbeSpec{}},
			want: &v1alpha1.ProbeSpec{},
		},
		"probe.interval": {
			spec: v1alpha1.RemoteStateSpec{Probe: &v1alpha1.ProbeSpec{Interval: d(time.Minute)}},
			want: &v1alpha1.ProbeSpec{Interval: d(time.Minute)},
		},
		"probe.interval 0s": {
			spec: v1alpha1.RemoteStateSpec{Probe: &v1alpha1.ProbeSpec{Interval: d(0)}},
			want: &v1alpha1.ProbeSpec{Interval: d(0)},
		},
		"deprecated interval alone": {
			spec: v1alpha1.RemoteStateSpec{Interval: d(time.Hour)},
			want: &v1alpha1.ProbeSpec{Interval: d(time.Hour)},
		},
		"deprecated interval with a probe that sets none": {
			spec: v1alpha1.RemoteStateSpec{Interval: d(time.Hour), Probe: &v1alpha1.ProbeSpec{}},
			want: &v1alpha1.ProbeSpec{Interval: d(time.Hour)},
		},
		// Admission refuses both; stored before the rule, probe.interval wins.
		"both": {
			spec: v1alpha1.RemoteStateSpec{Interval: d(time.Hour), Probe: &v1alpha1.ProbeSpec{Interval: d(time.Minute)}},
			want: &v1alpha1.ProbeSpec{Interval: d(time.Minute)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.spec.DeepCopy()
			if diff := cmp.Diff(tc.want, tc.spec.EffectiveProbe()); diff != "" {
				t.Errorf("EffectiveProbe() mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, &tc.spec); diff != "" {
				t.Errorf("EffectiveProbe() changed the spec (-before +after):\n%s", diff)
			}
		})
	}
}
