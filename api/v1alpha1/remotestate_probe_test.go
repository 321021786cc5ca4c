package v1alpha1_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

func TestEffectiveProbe(t *testing.T) {
	d := func(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }
	cases := map[string]struct {
		spec backendsv1alpha1.RemoteStateSpec
		want *backendsv1alpha1.ProbeSpec
	}{
		"neither": {},
		"probe without interval": {
			spec: backendsv1alpha1.RemoteStateSpec{Probe: &backendsv1alpha1.ProbeSpec{}},
			want: &backendsv1alpha1.ProbeSpec{},
		},
		"probe.interval": {
			spec: backendsv1alpha1.RemoteStateSpec{Probe: &backendsv1alpha1.ProbeSpec{Interval: d(time.Minute)}},
			want: &backendsv1alpha1.ProbeSpec{Interval: d(time.Minute)},
		},
		"probe.interval 0s": {
			spec: backendsv1alpha1.RemoteStateSpec{Probe: &backendsv1alpha1.ProbeSpec{Interval: d(0)}},
			want: &backendsv1alpha1.ProbeSpec{Interval: d(0)},
		},
		"deprecated interval alone": {
			spec: backendsv1alpha1.RemoteStateSpec{Interval: d(time.Hour)},
			want: &backendsv1alpha1.ProbeSpec{Interval: d(time.Hour)},
		},
		"deprecated interval with a probe that sets none": {
			spec: backendsv1alpha1.RemoteStateSpec{Interval: d(time.Hour), Probe: &backendsv1alpha1.ProbeSpec{}},
			want: &backendsv1alpha1.ProbeSpec{Interval: d(time.Hour)},
		},
		// Admission refuses both; stored before the rule, probe.interval wins.
		"both": {
			spec: backendsv1alpha1.RemoteStateSpec{Interval: d(time.Hour), Probe: &backendsv1alpha1.ProbeSpec{Interval: d(time.Minute)}},
			want: &backendsv1alpha1.ProbeSpec{Interval: d(time.Minute)},
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
