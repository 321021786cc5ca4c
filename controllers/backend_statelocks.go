package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
)

// What a backend knows of the StateLocks that name it: whether one holds
// the lock of the state its probe reads (its Locked condition follows it
// within seconds), and which ones its deletion waits for. The functions
// below but stateLocksOf are pure and table-tested.

// stateLocksOf lists, from the cache, the StateLocks of backend's
// namespace that name it, a backend of kind, sorted by name.
//
// A sharded manager's cache holds only its shard's StateLocks: when it
// holds none that name a protected backend, they are listed from the API
// server, so that a StateLock of another shard (one moving between shards
// with its backend, or one on the wrong shard) keeps the backend
// protected, and its deletion waiting, as on one manager. That costs a
// List only when the last StateLock goes, or while one is on another
// shard.
func (r *reconciler) stateLocksOf(ctx context.Context, kind string, backend client.Object) ([]backendsv1alpha1.StateLock, error) {
	list := &backendsv1alpha1.StateLockList{}
	if err := r.client.List(ctx, list, client.InNamespace(backend.GetNamespace()),
		client.MatchingFields{backendRefIndex: backendRefValue(kind, backend.GetName())}); err != nil {
		return nil, fmt.Errorf("listing the StateLocks of %s %s: %w", kind, client.ObjectKeyFromObject(backend), err)
	}
	if len(list.Items) == 0 && r.opts.sharded() && controllerutil.ContainsFinalizer(backend, backendsv1alpha1.BackendProtectionFinalizer) {
		if err := r.apiReader.List(ctx, list, client.InNamespace(backend.GetNamespace())); err != nil {
			return nil, fmt.Errorf("listing the StateLocks of namespace %s: %w", backend.GetNamespace(), err)
		}
		list.Items = slices.DeleteFunc(list.Items, func(sl backendsv1alpha1.StateLock) bool {
			return !slices.Contains(stateLockBackend(&sl), backendRefValue(kind, backend.GetName()))
		})
	}
	slices.SortFunc(list.Items, func(a, b backendsv1alpha1.StateLock) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, nil
}

// holdsLock reports whether sl records a lock it holds.
func holdsLock(sl *backendsv1alpha1.StateLock) bool { return sl.Status.LockID != "" }

// holderOfProbedState returns the StateLock among locks that holds the lock
// of the default workspace, the state a backend's probe reads; nil when
// none does.
func holderOfProbedState(locks []backendsv1alpha1.StateLock) *backendsv1alpha1.StateLock {
	for i := range locks {
		if holdsLock(&locks[i]) && workspaceOrDefault(locks[i].Spec.Workspace) == backendsv1alpha1.DefaultWorkspace {
			return &locks[i]
		}
	}
	return nil
}

// stateLocksView is what the StateLocks of locks hold, as probe inputs of
// their backend: a StateLock taking or releasing a lock makes the
// backend's next probe due at once, so that a backend whose probe reads
// its lock shows the change within seconds rather than at its next
// interval.
func stateLocksView(locks []backendsv1alpha1.StateLock) []byte {
	var view []byte
	for i := range locks {
		if holdsLock(&locks[i]) {
			view = fmt.Appendf(view, "%s/%s=%s;", workspaceOrDefault(locks[i].Spec.Workspace), locks[i].Name, locks[i].Status.LockID)
		}
	}
	return view
}

// uncheckedLockVerdict is the lock status of a backend whose probe does
// not read its lock (an HttpBackend without probe.lockCheck, or probing
// off): held by holder, the StateLock that records holding it, when there
// is one; otherwise unknown, and said to be unchecked. checkHint says how
// the user has the lock read.
func uncheckedLockVerdict(holder *backendsv1alpha1.StateLock, checkHint string) lockVerdict {
	if holder == nil {
		return lockVerdict{known: true, obs: conditions.Observation{Status: metav1.ConditionUnknown, Reason: backendsv1alpha1.LockNotCheckedReason,
			Message: "The lock is not checked, and no StateLock holds it: " + checkHint}}
	}
	info := holder.Status.LockInfo
	if info == nil {
		info = &backendsv1alpha1.LockInfo{ID: holder.Status.LockID, Who: stateLockWho(holder)}
	}
	since := ""
	if holder.Status.HeldSince != nil {
		since = " since " + holder.Status.HeldSince.UTC().Format(time.RFC3339)
	}
	return lockVerdict{known: true, holder: info.DeepCopy(), obs: conditions.Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.LockHeldReason,
		Message: fmt.Sprintf("Lock %s is held by StateLock %s%s. The lock is not checked otherwise: %s",
			holder.Status.LockID, holder.Name, since, checkHint)}}
}

// applyUncheckedLock writes uncheckedLockVerdict into the status of a
// backend of kind: the Locked condition, status.lock, and the lock held
// series when a StateLock holds it. status.holderPod, which only a lock
// check fills in, is cleared.
func applyUncheckedLock(m *operatorMetrics, obj backendObject, kind string, holder *backendsv1alpha1.StateLock, checkHint string) {
	status := obj.SharedStatus()
	v := uncheckedLockVerdict(holder, checkHint)
	status.Lock, status.HolderPod = v.holder, nil
	m.lockAges.forget(kind, obj.GetNamespace(), obj.GetName())
	m.lockStaleAfter.DeleteLabelValues(kind, obj.GetNamespace(), obj.GetName())
	if v.holder != nil {
		m.recordLockSeries(kind, obj, v.holder, true)
	} else {
		m.lockHeld.DeleteLabelValues(kind, obj.GetNamespace(), obj.GetName())
	}
	conditions.Set(&status.Conditions, obj.GetGeneration(), backendsv1alpha1.LockedCondition, v.obs)
}

// lockedWord is status.locked for conditions: the Locked condition's
// status, Unchecked when the lock is not checked, "" without a Locked
// condition.
func lockedWord(conds []metav1.Condition) string {
	c := meta.FindStatusCondition(conds, backendsv1alpha1.LockedCondition)
	switch {
	case c == nil:
		return ""
	case c.Reason == backendsv1alpha1.LockNotCheckedReason:
		return "Unchecked"
	}
	return string(c.Status)
}

// deletionBlockers are the StateLocks among locks that a deleted backend
// waits for: those that hold its lock, and those being deleted that have
// not yet released theirs (their finalizer needs the backend).
func deletionBlockers(locks []backendsv1alpha1.StateLock) []backendsv1alpha1.StateLock {
	var blockers []backendsv1alpha1.StateLock
	for _, sl := range locks {
		finalizing := !sl.DeletionTimestamp.IsZero() && controllerutil.ContainsFinalizer(&sl, backendsv1alpha1.StateLockFinalizer)
		if holdsLock(&sl) || finalizing {
			blockers = append(blockers, sl)
		}
	}
	return blockers
}

// maxBlockersNamed bounds the StateLocks an InUse message names.
const maxBlockersNamed = 5

// inUseObservation is the Ready condition of a backend of kind whose
// deletion waits for blockers (see deletionBlockers): which StateLocks,
// which lock each holds, and what to do.
func inUseObservation(blockers []backendsv1alpha1.StateLock) conditions.Observation {
	var named, names []string
	for i, sl := range blockers {
		if i == maxBlockersNamed {
			named = append(named, fmt.Sprintf("and %d more", len(blockers)-i))
			break
		}
		names = append(names, sl.Name)
		switch {
		case !sl.DeletionTimestamp.IsZero():
			named = append(named, fmt.Sprintf("StateLock %s (deleted, releasing its lock)", sl.Name))
		default:
			named = append(named, fmt.Sprintf("StateLock %s (holds lock %s)", sl.Name, sl.Status.LockID))
		}
	}
	return conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.InUseReason, Message: fmt.Sprintf(
		"Deletion waits until no StateLock holds this backend's lock: %s. Delete them (kubectl delete statelock -n %s %s) "+
			"to release their locks, or wait for their spec.until; the backend is deleted right after.",
		strings.Join(named, ", "), blockers[0].Namespace, strings.Join(names, " "))}
}

// lockedBackend returns a map function that enqueues the backend of kind
// a StateLock names.
func lockedBackend(kind string) handler.MapFunc {
	return func(_ context.Context, obj client.Object) []reconcile.Request {
		sl, ok := obj.(*backendsv1alpha1.StateLock)
		if !ok || sl.Spec.BackendRef.Kind != kind {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: sl.Namespace, Name: sl.Spec.BackendRef.Name}}}
	}
}

// stateLockHoldingChanged passes the creation and deletion of StateLocks,
// and the updates that change what their backend depends on: the lock
// they hold, or the start of their deletion.
func stateLockHoldingChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*backendsv1alpha1.StateLock)
		after, ok2 := e.ObjectNew.(*backendsv1alpha1.StateLock)
		return ok1 && ok2 && (before.Status.LockID != after.Status.LockID ||
			before.DeletionTimestamp.IsZero() != after.DeletionTimestamp.IsZero())
	}}
}
