package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// event is one Kubernetes event to emit.
type event struct {
	eventType, reason, action, note string
}

// transitionEvents returns the events for the condition changes between
// before and after: Ready becoming True or not True (but not while work is
// merely in progress), a lock appearing or going away, and the operator
// releasing one (Locked's reason becoming ForceUnlocked, whatever Locked
// was before: a release is audited even on a backend's first probe). A
// reconciliation that changes nothing emits nothing.
func transitionEvents(before, after []metav1.Condition) []event {
	var events []event
	if ready, changed := changedCondition(before, after, backendsv1alpha1.ReadyCondition); changed {
		switch {
		case ready.Status == metav1.ConditionTrue:
			events = append(events, event{corev1.EventTypeNormal, ready.Reason, "Reconcile", ready.Message})
		case ready.Reason == backendsv1alpha1.ProgressingReason:
			// Work in progress (a probe under way) is not worth a warning.
		default:
			events = append(events, event{corev1.EventTypeWarning, ready.Reason, "Reconcile", ready.Message})
		}
	}
	locked, changed := changedCondition(before, after, backendsv1alpha1.LockedCondition)
	was := meta.FindStatusCondition(before, backendsv1alpha1.LockedCondition)
	switch {
	case locked == nil:
	case locked.Reason == backendsv1alpha1.ForceUnlockedReason:
		if was == nil || was.Reason != backendsv1alpha1.ForceUnlockedReason {
			events = append(events, event{corev1.EventTypeNormal, backendsv1alpha1.ForceUnlockedReason, "ForceUnlock", locked.Message})
		}
	case !changed:
	case locked.Status == metav1.ConditionTrue:
		events = append(events, event{corev1.EventTypeNormal, backendsv1alpha1.LockHeldReason, "Probe", locked.Message})
	case was != nil && was.Status == metav1.ConditionTrue && locked.Status == metav1.ConditionFalse:
		events = append(events, event{corev1.EventTypeNormal, "LockReleased", "Probe", locked.Message})
	}
	return events
}

// changedCondition returns the condition of type t in after when its status
// differs from before (or it is new).
func changedCondition(before, after []metav1.Condition, t string) (*metav1.Condition, bool) {
	now := meta.FindStatusCondition(after, t)
	if now == nil {
		return nil, false
	}
	was := meta.FindStatusCondition(before, t)
	return now, was == nil || was.Status != now.Status
}
