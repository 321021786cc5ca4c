package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// Writing what a probe learned of a lock into a backend's status and lock
// metric, the same for every kind; lockStatus (lockstatus.go) decides
// what it says.

// applyLock writes what a probe that ended at finished learned of the
// lock: the verdict of reading (see lockStatus) into the Locked
// condition, status.lock and the lock metric, and a release into
// status.lastForceUnlock. A verdict that learned nothing of the holder
// leaves status.lock and the metric as they were. The event comes from
// the Locked transition (see transitionEvents), so writing the same
// result again emits nothing more.
func applyLock(obj backendObject, kind string, reading lockReading, forceUnlock *backendsv1alpha1.ForceUnlockSpec, finished time.Time) {
	status := obj.SharedStatus()
	if reading.released {
		status.LastForceUnlock = &backendsv1alpha1.ForceUnlockStatus{LockID: reading.holder.ID, Time: metav1.NewTime(finished)}
	}
	v := lockStatus(reading, forceUnlockID(forceUnlock))
	if v.known {
		status.Lock = v.holder
		held := 0.0
		if v.holder != nil || v.obs.status == metav1.ConditionTrue {
			held = 1
		}
		lockHeld.WithLabelValues(kind, obj.GetNamespace(), obj.GetName()).Set(held)
	}
	setCondition(&status.Conditions, obj.GetGeneration(), backendsv1alpha1.LockedCondition, v.obs)
}

// clearLock forgets the lock of a backend whose lock is not checked.
func clearLock(obj backendObject, kind string) {
	status := obj.SharedStatus()
	meta.RemoveStatusCondition(&status.Conditions, backendsv1alpha1.LockedCondition)
	status.Lock = nil
	lockHeld.DeleteLabelValues(kind, obj.GetNamespace(), obj.GetName())
}

// forceUnlockID is the lock ID a backend's spec.forceUnlock names, or "".
func forceUnlockID(f *backendsv1alpha1.ForceUnlockSpec) string {
	if f == nil {
		return ""
	}
	return f.LockID
}
