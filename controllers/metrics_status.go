package controllers

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
)

// The per-backend series the alerts read (charts/backend-operator's
// PrometheusRule, docs/monitoring.md): whether the last probe reached the
// state, and the stale threshold of the lock it checks. Their values are
// decided by the pure functions of this file from the status and the
// spec, so that a restarted manager serves them from the status it finds
// before its first probe.

// reachedReasons are the reasons of a probe condition (StateReachable,
// BucketReady) whose probe reached the state: the backend answered the
// read, with a state (possibly one that cannot be used) or with none. An
// HttpBackend's StateUnreadable, DecryptionFailed, BudgetExceeded (its key
// derivation refused) and StateNotEncrypted come from a read the server
// answered with a body; a CosBackend's come after its bucket check
// succeeded.
var reachedReasons = map[string]bool{
	backendsv1alpha1.ReachableReason:         true,
	backendsv1alpha1.StateUnreadableReason:   true,
	backendsv1alpha1.DecryptionFailedReason:  true,
	backendsv1alpha1.BudgetExceededReason:    true,
	backendsv1alpha1.StateNotEncryptedReason: true,
}

// reachableValue is the infrastate_backend_reachable value of a probe
// condition: 1 when its probe reached the state (see reachedReasons), 0
// when the probe failed to. It is not ok, and the series is left as it
// is, when the condition records no probe: none yet, probing disabled, or
// a probe that stopped on an internal error (ProbeFailed), which says
// nothing of the backend.
func reachableValue(cond *metav1.Condition) (value float64, ok bool) {
	if cond == nil {
		return 0, false
	}
	switch {
	case reachedReasons[cond.Reason]:
		return 1, true
	case cond.Status == metav1.ConditionFalse:
		return 0, true
	}
	return 0, false
}

// recordReachable sets the infrastate_backend_reachable series of obj
// from its probe condition, as the probe step of plan left it, and
// removes it while plan does not probe the state (plan.off).
func (m *operatorMetrics) recordReachable(kind string, obj backendObject, plan probePlan) {
	if plan.off != nil {
		m.backendReachable.DeleteLabelValues(kind, obj.GetNamespace(), obj.GetName())
		return
	}
	cond := meta.FindStatusCondition(obj.SharedStatus().Conditions, plan.condition)
	if value, ok := reachableValue(cond); ok {
		m.backendReachable.WithLabelValues(kind, obj.GetNamespace(), obj.GetName()).Set(value)
	}
}

// forgetReachableWhenStalled removes the infrastate_backend_reachable
// series of a backend whose reconcile ended in err, when err is a stall:
// a stalled backend is not probed, so the value its last probe left says
// nothing of its state now (its Stalled condition says what is wrong),
// and a new manager, which stalls before the probe too, serves none.
func (m *operatorMetrics) forgetReachableWhenStalled(kind string, obj backendObject, err error) {
	if _, stalled := conditions.AsStall(err); stalled {
		m.backendReachable.DeleteLabelValues(kind, obj.GetNamespace(), obj.GetName())
	}
}

// staleAfterSeconds is the infrastate_backend_lock_stale_after_seconds
// value of policy: its staleAfter, not ok when unset.
func staleAfterSeconds(policy *backendsv1alpha1.LockPolicy) (float64, bool) {
	if policy == nil || policy.StaleAfter == nil {
		return 0, false
	}
	return policy.StaleAfter.Seconds(), true
}

// recordLockStaleAfter sets the infrastate_backend_lock_stale_after_seconds
// series of a backend whose lock a probe checked, from its lockPolicy, or
// removes it when the policy sets no staleAfter.
func (m *operatorMetrics) recordLockStaleAfter(kind string, obj backendObject, policy *backendsv1alpha1.LockPolicy) {
	if seconds, ok := staleAfterSeconds(policy); ok {
		m.lockStaleAfter.WithLabelValues(kind, obj.GetNamespace(), obj.GetName()).Set(seconds)
		return
	}
	m.lockStaleAfter.DeleteLabelValues(kind, obj.GetNamespace(), obj.GetName())
}
