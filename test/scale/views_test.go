package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers"
)

func condition(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason}
}

func TestViewOfBackend(t *testing.T) {
	cases := map[string]struct {
		backend *backendsv1alpha1.HttpBackend
		want    backendView
	}{
		"locked by a StateLock": {
			backend: &backendsv1alpha1.HttpBackend{
				ObjectMeta: metav1.ObjectMeta{
					Generation: 2, Labels: map[string]string{controllers.ShardLabel: "a"},
					Finalizers: []string{backendsv1alpha1.BackendProtectionFinalizer},
				},
				Status: backendsv1alpha1.HttpBackendStatus{BackendStatus: backendsv1alpha1.BackendStatus{
					ObservedGeneration: 2,
					Conditions: []metav1.Condition{
						condition(backendsv1alpha1.ReadyCondition, metav1.ConditionTrue, "Succeeded"),
						condition(backendsv1alpha1.LockedCondition, metav1.ConditionTrue, "LockHeld"),
					},
				}},
			},
			want: backendView{Shard: "a", Ready: true, Reason: "Succeeded", Protected: true, Locked: "True"},
		},
		"Ready at an older generation, no lock seen": {
			backend: &backendsv1alpha1.HttpBackend{
				ObjectMeta: metav1.ObjectMeta{Generation: 3},
				Status: backendsv1alpha1.HttpBackendStatus{BackendStatus: backendsv1alpha1.BackendStatus{
					ObservedGeneration: 2,
					Conditions:         []metav1.Condition{condition(backendsv1alpha1.ReadyCondition, metav1.ConditionTrue, "Succeeded")},
				}},
			},
			want: backendView{Reason: "Succeeded"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, viewOfBackend(tc.backend)); diff != "" {
				t.Errorf("viewOfBackend mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestViewOfStateLock(t *testing.T) {
	cases := map[string]struct {
		lock *backendsv1alpha1.StateLock
		want stateLockView
	}{
		"holding its lock": {
			lock: &backendsv1alpha1.StateLock{
				ObjectMeta: metav1.ObjectMeta{Generation: 1, Labels: map[string]string{controllers.ShardLabel: "b"}},
				Status: backendsv1alpha1.StateLockStatus{
					ObservedGeneration: 1, LockID: "id",
					Conditions: []metav1.Condition{condition(backendsv1alpha1.ReadyCondition, metav1.ConditionTrue, "LockAcquired")},
				},
			},
			want: stateLockView{Shard: "b", LockID: "id", Ready: true, Reason: "LockAcquired"},
		},
		"lost": {
			lock: &backendsv1alpha1.StateLock{
				ObjectMeta: metav1.ObjectMeta{Generation: 1},
				Status: backendsv1alpha1.StateLockStatus{
					ObservedGeneration: 1,
					Conditions: []metav1.Condition{
						condition(backendsv1alpha1.ReadyCondition, metav1.ConditionFalse, backendsv1alpha1.LockLostReason),
						condition(backendsv1alpha1.LockedCondition, metav1.ConditionFalse, backendsv1alpha1.LockLostReason),
					},
				},
			},
			want: stateLockView{Reason: backendsv1alpha1.LockLostReason, Lost: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, viewOfStateLock(tc.lock)); diff != "" {
				t.Errorf("viewOfStateLock mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnomalies(t *testing.T) {
	if got := lockedBackendAnomalies(backendView{Ready: true, Protected: true, Locked: "True"}); len(got) != 0 {
		t.Errorf("lockedBackendAnomalies of a locked backend = %q, want none", got)
	}
	want := []string{"backend not Ready (none)", "backend without " + backendsv1alpha1.BackendProtectionFinalizer, "backend Locked Unknown"}
	if diff := cmp.Diff(want, lockedBackendAnomalies(backendView{Locked: "Unknown"})); diff != "" {
		t.Errorf("lockedBackendAnomalies mismatch (-want +got):\n%s", diff)
	}
	if got := stateLockAnomalies(stateLockView{LockID: "id", Ready: true}, "id"); len(got) != 0 {
		t.Errorf("stateLockAnomalies of a held lock = %q, want none", got)
	}
	want = []string{"StateLock not Ready (LockLost)", "StateLock LockLost", "StateLock lock ID changed"}
	if diff := cmp.Diff(want, stateLockAnomalies(stateLockView{Reason: "LockLost", Lost: true}, "id")); diff != "" {
		t.Errorf("stateLockAnomalies mismatch (-want +got):\n%s", diff)
	}
}

func TestSightings(t *testing.T) {
	k1 := types.NamespacedName{Namespace: "ns", Name: "k1"}
	k2 := types.NamespacedName{Namespace: "ns", Name: "k2"}
	s := sightings{}
	if got := s.String(); got != "none" {
		t.Errorf("String() of nothing = %q, want none", got)
	}
	s.add(k1, []string{"StateLock not Ready (ReferenceOnOtherShard)"})
	s.add(k1, []string{"StateLock not Ready (ReferenceOnOtherShard)", "backend Locked Unknown"})
	other := sightings{}
	other.add(k2, []string{"StateLock not Ready (ReferenceOnOtherShard)"})
	s.merge(other)
	if want := "StateLock not Ready (ReferenceOnOtherShard) on 2, backend Locked Unknown on 1"; s.String() != want {
		t.Errorf("String() = %q, want %q", s.String(), want)
	}
	if !s.seen("backend Locked Unknown") || s.seen("StateLock LockLost") {
		t.Errorf("seen: got %v and %v, want true and false", s.seen("backend Locked Unknown"), s.seen("StateLock LockLost"))
	}
}

func TestCheckStateLocks(t *testing.T) {
	nn := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }
	want := map[types.NamespacedName]string{nn("x"): "id-x", nn("y"): "id-y"}
	cases := map[string]struct {
		got    map[types.NamespacedName]stateLockView
		want   stateLocksReport
		wantOK bool
	}{
		"held as before, on b": {
			got: map[types.NamespacedName]stateLockView{
				nn("x"): {Shard: "b", LockID: "id-x", Ready: true}, nn("y"): {Shard: "b", LockID: "id-y", Ready: true},
			},
			want: stateLocksReport{StateLocks: 2}, wantOK: true,
		},
		"one lost and taken again, one gone": {
			got: map[types.NamespacedName]stateLockView{nn("x"): {Shard: "a", LockID: "id-x2", Reason: "LockLost", Lost: true}},
			want: stateLocksReport{
				StateLocks: 2, Missing: []string{"ns/y"}, NotReady: []string{"ns/x (LockLost)"},
				Changed: []string{`ns/x ("id-x2", was "id-x")`}, Lost: []string{"ns/x"}, Misplaced: []string{`ns/x (shard "a")`},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := checkStateLocks(want, tc.got, "b")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("checkStateLocks mismatch (-want +got):\n%s", diff)
			}
			if got.ok() != tc.wantOK {
				t.Errorf("ok() = %v, want %v", got.ok(), tc.wantOK)
			}
		})
	}
}
