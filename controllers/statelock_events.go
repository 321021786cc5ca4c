package controllers

import (
	"slices"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/infrastate/backend-operator/controllers/internal/conditions"
)

// stateLockReasons are the reasons of a StateLock's Locked condition,
// which its Ready condition repeats: stateLockEvents reports them from
// Locked alone.
var stateLockReasons = []string{
	backendsv1alpha1.SucceededReason, backendsv1alpha1.LockAcquiredReason, backendsv1alpha1.WaitingForLockReason,
	backendsv1alpha1.LockLostReason, backendsv1alpha1.ExpiredReason, backendsv1alpha1.ProgressingReason,
}

// stateLockEvents returns the events of a StateLock's status changes: the
// lock taken (Normal LockAcquired), waited for (Normal WaitingForLock),
// lost (Warning LockLost) or released at expiry (Normal Expired), each
// when Locked takes that reason; and a Warning when Ready becomes False
// or Unknown for another reason (a backend missing or unreachable).
func stateLockEvents(before, after statusView) []event {
	var events []event
	if locked, changed := conditions.ChangedReason(before.conditions, after.conditions, backendsv1alpha1.LockedCondition); changed {
		switch {
		case locked.Status == metav1.ConditionTrue:
			events = append(events, event{corev1.EventTypeNormal, backendsv1alpha1.LockAcquiredReason, "Lock", locked.Message})
		case locked.Reason == backendsv1alpha1.WaitingForLockReason:
			events = append(events, event{corev1.EventTypeNormal, locked.Reason, "Lock", locked.Message})
		case locked.Reason == backendsv1alpha1.LockLostReason:
			events = append(events, event{corev1.EventTypeWarning, locked.Reason, "Lock", locked.Message})
		case locked.Reason == backendsv1alpha1.ExpiredReason:
			events = append(events, event{corev1.EventTypeNormal, locked.Reason, "Unlock", locked.Message})
		}
	}
	if ready, changed := conditions.ChangedReason(before.conditions, after.conditions, backendsv1alpha1.ReadyCondition); changed &&
		ready.Status != metav1.ConditionTrue && !slices.Contains(stateLockReasons, ready.Reason) {
		events = append(events, event{corev1.EventTypeWarning, ready.Reason, "Reconcile", ready.Message})
	}
	return events
}
