package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// TestStatusMergePatch checks that statusMergePatch sends, byte for byte,
// what client.MergeFromWithOptimisticLock computes from the whole objects
// when only their statuses differ: fields set, changed and cleared,
// conditions added and removed, for the kinds' different statuses.
func TestStatusMergePatch(t *testing.T) {
	now := metav1.Unix(1767225600, 0)
	ready := metav1.Condition{Type: backendsv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Rendered", LastTransitionTime: now, ObservedGeneration: 2}
	reachable := metav1.Condition{Type: backendsv1alpha1.StateReachableCondition, Status: metav1.ConditionFalse, Reason: "Unreachable", Message: "no route", LastTransitionTime: now, ObservedGeneration: 2}
	backend := func() *backendsv1alpha1.HttpBackend {
		b := builders.MakeHttpBackend("b", "ns", "https://state.example/b").Generation(2).ObservedGeneration(1).Obj()
		b.ResourceVersion = "41"
		b.Labels = map[string]string{"team": "a"}
		b.Status.State = &backendsv1alpha1.StateSummary{Present: true, Serial: 4, Lineage: "l"}
		return b
	}
	lock := func() *backendsv1alpha1.StateLock {
		sl := builders.MakeStateLock("freeze", "ns", backendsv1alpha1.HttpBackendKind, "b").Obj()
		sl.ResourceVersion = "7"
		sl.Status.LockID = "id-1"
		sl.Status.HeldSince = &now
		return sl
	}
	cases := []struct {
		name   string
		before statusObject
		change func(statusObject)
	}{
		{name: "conditions added", before: backend(), change: func(o statusObject) {
			*o.StatusConditions() = []metav1.Condition{ready, reachable}
		}},
		{name: "a condition removed and one changed", before: func() statusObject {
			b := backend()
			b.Status.Conditions = []metav1.Condition{ready, reachable}
			return b
		}(), change: func(o statusObject) {
			c := ready
			c.Message = "Rendered again"
			*o.StatusConditions() = []metav1.Condition{c}
		}},
		{name: "a field cleared and one set", before: backend(), change: func(o statusObject) {
			b := o.(*backendsv1alpha1.HttpBackend)
			b.Status.State = nil
			b.Status.ObservedGeneration = 2
		}},
		{name: "a field of a nested status changed", before: backend(), change: func(o statusObject) {
			o.(*backendsv1alpha1.HttpBackend).Status.State.Serial = 5
		}},
		{name: "nothing changed", before: backend(), change: func(statusObject) {}},
		{name: "a StateLock's lock released", before: lock(), change: func(o statusObject) {
			sl := o.(*backendsv1alpha1.StateLock)
			sl.Status.LockID, sl.Status.HeldSince = "", nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			after := tc.before.DeepCopyObject().(statusObject)
			tc.change(after)
			want, err := client.MergeFromWithOptions(tc.before, client.MergeFromWithOptimisticLock{}).Data(after)
			if err != nil {
				t.Fatal(err)
			}
			got, err := statusMergePatch(tc.before, after)
			if err != nil {
				t.Fatalf("statusMergePatch() = %v", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("statusMergePatch() differs from MergeFromWithOptimisticLock (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatusMergePatchWithoutVersion checks that a status read without a
// resourceVersion is not patched unlocked.
func TestStatusMergePatchWithoutVersion(t *testing.T) {
	b := builders.MakeHttpBackend("b", "ns", "https://state.example/b").Obj()
	b.ResourceVersion = ""
	if _, err := statusMergePatch(b, b.DeepCopy()); err == nil {
		t.Fatal("statusMergePatch() = nil error for an object without a resourceVersion, want an error")
	}
}
