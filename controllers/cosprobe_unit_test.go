package controllers

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// TestCosProbingDisabledForgetsTheLock checks that turning probing off
// forgets everything the last probe learned of the lock: the Locked
// condition, status.lock and the lock-held gauge, which would otherwise
// go on reporting a lock nobody checks.
func TestCosProbingDisabledForgetsTheLock(t *testing.T) {
	backend := &backendsv1alpha1.CosBackend{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "gauge"},
		Spec:       backendsv1alpha1.CosBackendSpec{Probe: &backendsv1alpha1.ProbeSpec{Interval: &metav1.Duration{}}},
		Status: backendsv1alpha1.CosBackendStatus{BackendStatus: backendsv1alpha1.BackendStatus{
			Conditions: []metav1.Condition{{Type: backendsv1alpha1.LockedCondition, Status: metav1.ConditionTrue, Reason: backendsv1alpha1.LockHeldReason}},
			Lock:       &backendsv1alpha1.LockInfo{ID: "held"},
		}},
	}
	lockHeld.WithLabelValues(cosBackendKind, "team-a", "gauge").Set(1)
	t.Cleanup(func() { lockHeld.DeleteLabelValues(cosBackendKind, "team-a", "gauge") })

	r := newBackendReconciler(cosKind{}, nil, nil, nil)
	if err := r.reconcileProbe(context.Background(), &backendScope{obj: backend, resolved: &cosResolved{backend: backend}}); err != nil {
		t.Fatalf("reconcileProbe() = %v", err)
	}
	if backend.Status.Lock != nil || len(backend.Status.Conditions) != 1 || backend.Status.Conditions[0].Type != backendsv1alpha1.BucketReadyCondition {
		t.Errorf("status after disabling probes = lock %v, conditions %v; want no lock, BucketReady only", backend.Status.Lock, backend.Status.Conditions)
	}
	if lockHeld.DeleteLabelValues(cosBackendKind, "team-a", "gauge") {
		t.Errorf("the lock-held gauge still reports the backend with probing disabled")
	}
}
