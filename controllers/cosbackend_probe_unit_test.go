package controllers

import (
	"context"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// TestCosProbingDisabledForgetsTheLock checks that turning probing off
// forgets everything the last probe learned of the lock: the holder in
// status.lock and the lock-held gauge, which would otherwise go on
// reporting a lock nobody checks; Locked says the lock is not checked.
func TestCosProbingDisabledForgetsTheLock(t *testing.T) {
	backend := builders.MakeCosBackend("gauge", "team-a", "").ProbeInterval(0).Obj()
	backend.Status.BackendStatus = backendsv1alpha1.BackendStatus{
		Conditions: []metav1.Condition{{Type: backendsv1alpha1.LockedCondition, Status: metav1.ConditionTrue, Reason: backendsv1alpha1.LockHeldReason}},
		Lock:       &backendsv1alpha1.LockInfo{ID: "held"},
	}
	r := newBackendReconciler(cosKind{}, nil, nil, nil)
	r.metrics.lockHeld.WithLabelValues(backendsv1alpha1.CosBackendKind, "team-a", "gauge").Set(1)

	if err := r.reconcileProbe(context.Background(), &backendScope{obj: backend, resolved: &cosResolved{backend: backend}}); err != nil {
		t.Fatalf("reconcileProbe() = %v", err)
	}
	locked := apimeta.FindStatusCondition(backend.Status.Conditions, backendsv1alpha1.LockedCondition)
	if backend.Status.Lock != nil || locked == nil || locked.Status != metav1.ConditionUnknown || locked.Reason != backendsv1alpha1.LockNotCheckedReason {
		t.Errorf("status after disabling probes = lock %v, conditions %v; want no lock, Locked Unknown LockNotChecked", backend.Status.Lock, backend.Status.Conditions)
	}
	if r.metrics.lockHeld.DeleteLabelValues(backendsv1alpha1.CosBackendKind, "team-a", "gauge") {
		t.Errorf("the lock-held gauge still reports the backend with probing disabled")
	}
}

// TestCosAssumeRoleOnlyStateIsAStall checks that the state of a CosBackend
// whose only credentials are a role to assume is a stall to read: a
// RemoteState reading it publishes nothing until the backend's spec
// changes, and must say so rather than read as Ready.
func TestCosAssumeRoleOnlyStateIsAStall(t *testing.T) {
	backend := builders.MakeCosBackend("roles", "team-a", "tfstate-1250000000").AssumeRole("qcs::cam::uin/100000000001:roleName/tf", "tf").Obj()
	stream, err := (&cosResolved{backend: backend}).openState("default")
	se, ok := conditions.AsStall(err)
	if stream != nil || !ok || se.Reason != backendsv1alpha1.AssumeRoleNotSupportedReason {
		t.Fatalf("openState() = %v, %v; want no stream and an AssumeRoleNotSupported stall", stream != nil, err)
	}
}
