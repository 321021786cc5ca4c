package controllers

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
)

// historySeries are the values of the StateHistories' series m serves,
// by family name (and reason, for the failures).
func historySeries(t *testing.T, m *operatorMetrics) map[string]float64 {
	t.Helper()
	families, err := registryOf(t, m).Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "infrastate_statehistory_") {
			continue
		}
		for _, s := range f.GetMetric() {
			key := strings.TrimPrefix(f.GetName(), "infrastate_statehistory_")
			for _, l := range s.GetLabel() {
				if l.GetName() == "reason" {
					key += "/" + l.GetValue()
				}
			}
			out[key] = s.GetGauge().GetValue() + s.GetCounter().GetValue()
		}
	}
	return out
}

func TestHistorySeriesAcrossARestart(t *testing.T) {
	read := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	kept := backendsv1alpha1.StateHistoryStatus{SnapshotCount: 4, LastReadTime: &read,
		Conditions: []metav1.Condition{{Type: backendsv1alpha1.SnapshotsReadyCondition, Status: metav1.ConditionTrue, Reason: backendsv1alpha1.SnapshotStoredReason}}}
	failing := kept
	failing.Conditions = []metav1.Condition{{Type: backendsv1alpha1.SnapshotsReadyCondition, Status: metav1.ConditionFalse, Reason: backendsv1alpha1.DestinationRefusedReason}}
	tests := []struct {
		name       string
		status     backendsv1alpha1.StateHistoryStatus
		wantKept   int // series
		wantKeptAt float64
	}{
		{"a history whose last read kept its state serves when", kept, 1, float64(read.Unix())},
		{"a failing one serves no kept time: the alert must not read it as fresh", failing, 0, 0},
		{"a new one serves nothing yet", backendsv1alpha1.StateHistoryStatus{}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newOperatorMetrics(clock.RealClock{})
			key := types.NamespacedName{Namespace: "team-a", Name: "network"}
			m.seedHistory(key, tt.status)
			want := map[string]float64{"snapshots": float64(tt.status.SnapshotCount)}
			if tt.wantKept == 1 {
				want["newest_kept_timestamp_seconds"] = tt.wantKeptAt
			}
			if diff := cmp.Diff(want, historySeries(t, m)); diff != "" {
				t.Errorf("series after the seed (-want +got):\n%s", diff)
			}

			// A read after the seed wins; a second seed changes nothing.
			later := metav1.NewTime(read.Add(time.Hour))
			after := kept
			after.LastReadTime, after.SnapshotCount = &later, 5
			m.observeHistory(key, after, conditions.Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.SnapshotStoredReason})
			m.seedHistory(key, tt.status)
			m.observeHistory(key, after, conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.DestinationFullReason})
			want = map[string]float64{"snapshots": 5, "newest_kept_timestamp_seconds": float64(later.Unix()), "failures_total/DestinationFull": 1}
			if diff := cmp.Diff(want, historySeries(t, m)); diff != "" {
				t.Errorf("series after two reads (-want +got):\n%s", diff)
			}
			m.forgetHistory(key)
			if got := historySeries(t, m); len(got) != 0 {
				t.Errorf("a deleted history still serves %v", got)
			}
		})
	}
}
