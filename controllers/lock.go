package controllers

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
)

// Writing what a probe learned of a lock into a backend's status and lock
// metric, the same for every kind; lockStatus (lockstatus.go) decides
// what it says.

// applyLock writes what a probe that ended at finished learned of the
// lock of a backend of kind, whose client's failure classes are failures: the verdict of reading under the spec's forceUnlock and policy
// (see lockStatus) into the Locked condition, status.lock,
// status.holderPod and the lock metrics (the stale threshold of the
// policy included), and a release into
// status.lastForceUnlock. A verdict that learned nothing of the holder
// leaves status.lock, status.holderPod and the metrics as they were:
// status.holderPod always describes the lock status.lock names, as both
// come from the same reading. The event comes from the Locked transition
// (see transitionEvents), so writing the same result again emits nothing
// more.
func applyLock(m *operatorMetrics, obj backendObject, kind string, failures []failureClass, reading lockReading, forceUnlock *backendsv1alpha1.ForceUnlockSpec, policy *backendsv1alpha1.LockPolicy, finished time.Time) {
	status := obj.SharedStatus()
	if reading.released {
		// The lock released: the holder a conflict named, or, on a server
		// that names none, the lock forceUnlock named.
		id := reading.named
		if reading.holder != nil {
			id = reading.holder.ID
		}
		status.LastForceUnlock = &backendsv1alpha1.ForceUnlockStatus{LockID: id, Time: metav1.NewTime(finished)}
	}
	terms := lockTermsOf(forceUnlock, policy, finished)
	terms.failures = failures
	v := lockStatus(reading, terms)
	m.recordLockStaleAfter(kind, obj, policy)
	if v.known {
		status.Lock, status.HolderPod = v.holder, v.holderPod
		if !m.recordLockSeries(kind, obj, v.holder, v.holder != nil || v.obs.Status == metav1.ConditionTrue) {
			m.lockAges.forget(kind, obj.GetNamespace(), obj.GetName())
		}
	}
	conditions.Set(&status.Conditions, obj.GetGeneration(), backendsv1alpha1.LockedCondition, v.obs)
}

// seedLockSeries serves the lock series of a backend whose status names
// the holder of its lock, with the values applyLock set when it wrote
// that status.lock: a new manager serves them before its first probe, an
// interval away at most, so that an alert on a stale lock does not start
// its wait over at every restart. A status without a holder leaves the
// series to the next probe, and a holder without a creation time leaves
// the age series as it is.
func (m *operatorMetrics) seedLockSeries(kind string, obj backendObject, policy *backendsv1alpha1.LockPolicy) {
	holder := obj.SharedStatus().Lock
	if holder == nil {
		return
	}
	m.recordLockSeries(kind, obj, holder, true)
	m.recordLockStaleAfter(kind, obj, policy)
}

// recordLockSeries sets the lock series of a backend whose lock is held
// (or not) by holder, nil when none is known: infrastate_backend_locked
// from held, and the age of the lock when holder says when it was taken.
// It reports whether it set the age; the caller decides whether an age
// it did not set is forgotten.
func (m *operatorMetrics) recordLockSeries(kind string, obj backendObject, holder *backendsv1alpha1.LockInfo, held bool) bool {
	value := 0.0
	if held {
		value = 1
	}
	m.lockHeld.WithLabelValues(kind, obj.GetNamespace(), obj.GetName()).Set(value)
	if holder == nil || holder.Created == nil {
		return false
	}
	m.lockAges.set(kind, obj.GetNamespace(), obj.GetName(), holder.Created.Time)
	return true
}
