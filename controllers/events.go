package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
)

// event is one Kubernetes event to emit.
type event struct {
	eventType, reason, action, note string
}

// statusView is what transitionEvents compares: an object's conditions
// and, for a backend, the lock holder status.lock names (kept while the
// lock cannot be read).
type statusView struct {
	conditions []metav1.Condition
	holder     *backendsv1alpha1.LockInfo
}

// eventsFunc returns the events of the status changes from before to
// after, as one kind reports them: transitionEvents for backends and
// RemoteStates, stateLockEvents for StateLocks.
type eventsFunc func(before, after statusView) []event

// viewOf is the statusView of obj.
func viewOf(obj statusObject) statusView {
	v := statusView{conditions: *obj.StatusConditions()}
	if backend, ok := obj.(backendObject); ok {
		v.holder = backend.SharedStatus().Lock
	}
	return v
}

// transitionEvents returns the events for the status changes between
// before and after: Ready becoming True after it was False, or not True
// (but not while work is merely in progress), Ready staying not True for
// another reason, a lock appearing, changing holder or going away,
// a lock turning stale (one Warning per holder), and the operator
// releasing one (Locked's reason becoming ForceUnlocked or
// HolderGoneReleased, whatever Locked was before: a release is audited
// even on a backend's first probe). A lock whose last check failed (Locked Unknown) is still
// held by the holder status.lock kept: the next check that sees it free
// reports its release, and one that sees it held by the same holder
// reports nothing. A reconciliation that changes nothing emits nothing.
func transitionEvents(before, after statusView) []event {
	var events []event
	if ready, changed := conditions.Changed(before.conditions, after.conditions, backendsv1alpha1.ReadyCondition); changed {
		switch {
		case ready.Status == metav1.ConditionTrue:
			// Worth an event when it ends a failure. An object becoming
			// Ready the first time, or after a change, is what its
			// condition already says: an event for each would be one
			// more write per object than the work itself needs.
			if was := meta.FindStatusCondition(before.conditions, backendsv1alpha1.ReadyCondition); was != nil && was.Status == metav1.ConditionFalse {
				events = append(events, event{corev1.EventTypeNormal, ready.Reason, "Reconcile", ready.Message})
			}
		case ready.Reason == backendsv1alpha1.ProgressingReason:
			// Work in progress (a probe under way) is not worth a warning.
		default:
			events = append(events, event{corev1.EventTypeWarning, ready.Reason, "Reconcile", ready.Message})
		}
	} else if ready, changed := conditions.ChangedReason(before.conditions, after.conditions, backendsv1alpha1.ReadyCondition); changed &&
		ready.Status != metav1.ConditionTrue && ready.Reason != backendsv1alpha1.ProgressingReason {
		// Still not Ready, for another reason: kubectl describe shows
		// each reason in turn, not only the first.
		events = append(events, event{corev1.EventTypeWarning, ready.Reason, "Reconcile", ready.Message})
	}
	locked := meta.FindStatusCondition(after.conditions, backendsv1alpha1.LockedCondition)
	was := meta.FindStatusCondition(before.conditions, backendsv1alpha1.LockedCondition)
	wasHeld := was != nil && (was.Status == metav1.ConditionTrue || (was.Status == metav1.ConditionUnknown && before.holder != nil))
	newHolder := !wasHeld || holderID(before.holder) != holderID(after.holder)
	switch {
	case locked == nil:
	case locked.Reason == backendsv1alpha1.ForceUnlockedReason || locked.Reason == backendsv1alpha1.HolderGoneReleasedReason:
		if was == nil || was.Reason != locked.Reason {
			events = append(events, event{corev1.EventTypeNormal, locked.Reason, "ForceUnlock", locked.Message})
		}
	case locked.Reason == backendsv1alpha1.StaleLockReason:
		// Once per holder: when its lock turns stale, or a new holder's is
		// stale at first sight. A stale lock seen again after a failed
		// check warns again: whether it turned stale meanwhile is unknown,
		// and a missed warning costs more than a repeated one.
		if newHolder || was.Reason != backendsv1alpha1.StaleLockReason {
			events = append(events, event{corev1.EventTypeWarning, backendsv1alpha1.StaleLockReason, "Probe", locked.Message})
		}
	case locked.Status == metav1.ConditionTrue:
		if newHolder {
			events = append(events, event{corev1.EventTypeNormal, backendsv1alpha1.LockHeldReason, "Probe", locked.Message})
		}
	case locked.Status == metav1.ConditionFalse && wasHeld:
		events = append(events, event{corev1.EventTypeNormal, "LockReleased", "Probe", locked.Message})
	}
	return events
}

// holderID is the lock ID of a holder, "" when it is unknown or none.
func holderID(h *backendsv1alpha1.LockInfo) string {
	if h == nil {
		return ""
	}
	return h.ID
}
