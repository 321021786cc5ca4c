package controllers

import (
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/owned"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
)

// stateLockGates are the conditions that gate a StateLock's Ready: it is
// Ready while it holds its lock.
var stateLockGates = []string{backendsv1alpha1.LockedCondition}

// stateLockReconciler holds a backend's state lock for each StateLock:
// it takes the lock (waiting for another holder, never by force), checks
// at every probe interval of the backend that it still holds it, releases
// it when spec.until passes, and releases it before the object goes away
// (a finalizer).
type stateLockReconciler struct {
	reconciler
}

// newStateLockReconciler returns a reconciler that writes through c and
// reads Secrets through apiReader, which must not be a cache.
func newStateLockReconciler(c client.Client, apiReader client.Reader, recorder events.EventRecorder, opts ...Option) *stateLockReconciler {
	r := &stateLockReconciler{newReconciler(c, apiReader, recorder, opts)}
	r.transitions = stateLockEvents
	return r
}

// slockScope collects what the phases of one reconciliation read and
// write.
type slockScope struct {
	// sl is the StateLock; phases set its status.
	sl *backendsv1alpha1.StateLock
	// kind, backend and resolved are the backend and its references,
	// filled by reconcileBackend.
	kind     backendKind
	backend  backendObject
	resolved resolvedBackend
	// requeueAfter is the wait until the next lock operation or until
	// expires, set by reconcileLock.
	requeueAfter time.Duration
	// probePending is true while a lock operation is under way.
	probePending bool
	// applied is the operation result written to status.
	applied *probes.Result
	// waiting is the Reconciling condition while another holds the lock.
	waiting *conditions.Observation
}

// backendName names the StateLock's backend in messages.
func (s *slockScope) backendName() string {
	ref := s.sl.Spec.BackendRef
	return ref.Kind + " " + ref.Name
}

// Reconcile holds the StateLock's lock, or releases it when the object is
// being deleted. Status is patched once, at the end.
func (r *stateLockReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sl := &backendsv1alpha1.StateLock{}
	if found, err := r.get(ctx, req, sl, backendsv1alpha1.StateLockKind); !found {
		return ctrl.Result{}, err
	}
	if !sl.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, sl)
	}
	if !controllerutil.ContainsFinalizer(sl, backendsv1alpha1.StateLockFinalizer) {
		// Before any lock is taken: the lock is released before the
		// object goes away.
		if err := r.patchFinalizer(ctx, sl, controllerutil.AddFinalizer); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
	}
	return r.reconcileObject(ctx, req, sl, backendsv1alpha1.StateLockKind, func(ctx context.Context) (outcome, time.Duration, error) {
		s := &slockScope{sl: sl}
		err := runPhases(ctx, s, r.reconcileBackend, r.reconcileLock)
		out := stateLockOutcome(meta.FindStatusCondition(sl.Status.Conditions, backendsv1alpha1.LockedCondition))
		out.ProbePending, out.Waiting = s.probePending, s.waiting
		return outcome{Outcome: out, applied: s.applied}, s.requeueAfter, err
	})
}

// stateLockOutcome is the outcome of a StateLock's reconciliation whose
// Locked condition is locked: Ready follows Locked (True while the lock
// is held), except once the StateLock expired, when it has done all its
// spec asks: Ready is then True with reason Expired, so that GitOps tools
// and kubectl wait read it as current rather than in progress forever.
func stateLockOutcome(locked *metav1.Condition) conditions.Outcome {
	switch {
	case locked == nil:
		return conditions.Outcome{ReadyReason: backendsv1alpha1.LockAcquiredReason, Gates: stateLockGates}
	case locked.Reason == backendsv1alpha1.ExpiredReason:
		return conditions.Outcome{ReadyMessage: locked.Message, ReadyReason: backendsv1alpha1.ExpiredReason}
	case locked.Reason == backendsv1alpha1.HolderNotReportedReason:
		// The lock is held as far as anyone can tell: the freeze is in
		// place, and nothing the operator waits for will say more.
		return conditions.Outcome{ReadyMessage: locked.Message, ReadyReason: backendsv1alpha1.HolderNotReportedReason}
	}
	return conditions.Outcome{ReadyMessage: locked.Message, ReadyReason: backendsv1alpha1.LockAcquiredReason, Gates: stateLockGates}
}

// reconcileBackend reads the backend the StateLock names and its
// references through its kind. A missing backend is a stall with reason
// BackendNotFound, a backend whose references are broken one with
// BackendNotReady; the watch on backends brings the object back when they
// change.
func (r *stateLockReconciler) reconcileBackend(ctx context.Context, s *slockScope) error {
	kind, backend, resolved, err := r.resolveBackendRef(ctx, s.sl.Namespace, s.sl.Spec.BackendRef)
	if err != nil {
		if se, ok := conditions.AsStall(err); ok && s.sl.Status.LockID != "" {
			return conditions.Stall(se.Reason, "%s; the lock %s the StateLock took stays held on the server", se.Message, s.sl.Status.LockID)
		}
		return err
	}
	s.kind, s.backend, s.resolved = kind, backend, resolved
	return nil
}

// reconcileLock takes, checks or releases the lock as planStateLock says.
// The operations run off the reconcile path (see prober), as probes do:
// the reconcile that their end triggers writes what they learned.
func (r *stateLockReconciler) reconcileLock(ctx context.Context, s *slockScope) error {
	sl := s.sl
	now := r.opts.clock.Now()
	action := planStateLock(sl, now)
	key := probes.Key{Kind: backendsv1alpha1.StateLockKind, NamespacedName: client.ObjectKeyFromObject(sl)}
	if sl.Spec.Until != nil && !expired(sl, now) {
		s.requeueAfter = sl.Spec.Until.Sub(now)
	}
	switch {
	case action == slockIdle && (releaseWithheld(sl) || (lockLost(sl) && !expired(sl, now))):
		r.probes.Forget(key)
		return lockStall(sl)
	case action == slockIdle:
		r.probes.Forget(key)
		if c := meta.FindStatusCondition(sl.Status.Conditions, backendsv1alpha1.LockedCondition); c == nil || c.Reason != backendsv1alpha1.ExpiredReason {
			conditions.Set(&sl.Status.Conditions, sl.Generation, backendsv1alpha1.LockedCondition, expiredObservation(sl, "", s.backendName()))
		}
		return nil
	}

	if action == slockHold && !holdsLock(sl) {
		switch protected, err := takeAllowed(s.backend, s.backendName()); {
		case err != nil:
			r.probes.Forget(key)
			return err
		case !protected:
			// The backend's reconciler adds the finalizer, and the watch
			// on backends brings the StateLock back once it is there.
			s.probePending, s.requeueAfter = true, minLockRetry
			s.waiting = &conditions.Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.ProgressingReason, Message: fmt.Sprintf(
				"Waiting for %s to be protected from deletion (finalizer %s) before taking its lock", s.backendName(), backendsv1alpha1.BackendProtectionFinalizer)}
			return nil
		}
		if msg := s.resolved.lockWaiting(); msg != "" {
			// The backend's probe learns what it waits for; the status
			// change it writes is polled for here.
			s.probePending, s.requeueAfter = true, minLockRetry
			obs := learningObservation(msg, s.backend.SharedStatus().Lock, s.backendName())
			sl.Status.Holder = s.backend.SharedStatus().Lock.DeepCopy()
			conditions.Set(&sl.Status.Conditions, sl.Generation, backendsv1alpha1.LockedCondition, obs)
			s.waiting = &conditions.Observation{Status: metav1.ConditionTrue, Reason: obs.Reason, Message: obs.Message}
			return nil
		}
	}
	start, err := s.startOf(slockOperation{action: action, held: heldFromStatus(sl), take: newStateLockInfo(sl, now), owns: lockOwnedBy(sl),
		noLossSeen: sl.Status.LockID != ""})
	if err != nil {
		return err
	}
	checkEvery := probeInterval(s.kind.probeSpec(s.backend), r.opts.defaultProbeInterval)
	if checkEvery == 0 {
		checkEvery = r.opts.defaultProbeInterval
	}
	inputs := fingerprint(append(append(identity(sl), identity(s.backend)...),
		append(s.resolved.inputs(), []byte(action.String()), []byte(sl.Annotations[backendsv1alpha1.ReacquireAnnotation]),
			backendLockView(s.backend))...)...)
	task := probeTask{kind: backendsv1alpha1.StateLockKind, obj: sl, inputs: inputs, interval: slockInterval(sl, action, checkEvery, now),
		condition: backendsv1alpha1.LockedCondition,
		// The next operation depends on what this one learned: a lock
		// taken is checked at the backend's probe interval, not retried.
		intervalAfter: func() time.Duration { return slockInterval(sl, planStateLock(sl, now), checkEvery, now) }}
	apply := func(res *probes.Result) error {
		applySlockResult(sl, res.Value.(slockResult), s.backendName(), s.kind.failures())
		return nil
	}
	step, err := r.advanceProbe(ctx, task, apply, start)
	s.probePending, s.applied = step.pending, step.ack
	s.requeueAfter = earliest(s.requeueAfter, step.requeueAfter)
	if c := meta.FindStatusCondition(sl.Status.Conditions, backendsv1alpha1.LockedCondition); c != nil && c.Reason == backendsv1alpha1.WaitingForLockReason {
		// In progress (kstatus), though the generation was observed.
		s.waiting = &conditions.Observation{Status: metav1.ConditionTrue, Reason: c.Reason, Message: c.Message}
	}
	if err == nil {
		return lockStall(sl)
	}
	return err
}

// takeAllowed reports whether a StateLock may take the lock of backend
// (named name in messages): only once the backend carries its protection
// finalizer, so that the backend cannot go away while the lock is held.
// A backend being deleted is a stall: its lock is not taken again.
func takeAllowed(backend backendObject, name string) (bool, error) {
	switch {
	case !backend.GetDeletionTimestamp().IsZero():
		return false, conditions.Stall(backendsv1alpha1.BackendNotReadyReason,
			"%s is being deleted: the StateLock does not take its lock. Create the backend again once it is gone, or delete this StateLock", name)
	case !controllerutil.ContainsFinalizer(backend, backendsv1alpha1.BackendProtectionFinalizer):
		return false, nil
	}
	return true, nil
}

// startOf returns the start of op on the lock of the StateLock's
// workspace, with the locker of its backend (filled by reconcileBackend).
// A backend whose lock cannot be taken is a stall.
func (s *slockScope) startOf(op slockOperation) (func() (probes.Func, error), error) {
	locker, err := s.resolved.locker(workspaceOrDefault(s.sl.Spec.Workspace), s.sl)
	if err != nil {
		return nil, err
	}
	return func() (probes.Func, error) {
		return func(ctx context.Context) any { return op.run(ctx, locker) }, nil
	}, nil
}

// earliest is the shorter of two waits, ignoring a zero one.
func earliest(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// heldFromStatus is the lock sl's status records, a zero heldLock when
// none.
func heldFromStatus(sl *backendsv1alpha1.StateLock) heldLock {
	switch {
	case sl.Status.LockID == "":
		return heldLock{}
	case sl.Status.LockInfo == nil:
		// Released with the ID alone, as OpenTofu's force-unlock does.
		return heldLock{id: sl.Status.LockID, info: backendsv1alpha1.LockInfo{ID: sl.Status.LockID}}
	}
	return heldLock{id: sl.Status.LockID, info: *sl.Status.LockInfo.DeepCopy()}
}

// lockOwnedBy is ownsLock for a copy of sl as it is now: the operation runs
// after the reconcile, on its own goroutine.
func lockOwnedBy(sl *backendsv1alpha1.StateLock) func(*backendsv1alpha1.LockInfo) bool {
	snapshot := sl.DeepCopy()
	return func(h *backendsv1alpha1.LockInfo) bool { return ownsLock(snapshot, h) }
}

// backendLockView is what a backend's status says of its lock: a change
// (the holder a StateLock waits for released it, a force unlock released
// the StateLock's own) makes the StateLock's next operation due at once.
func backendLockView(backend backendObject) []byte {
	st := backend.SharedStatus()
	view := holderID(st.Lock)
	if st.LastForceUnlock != nil {
		view += "/" + st.LastForceUnlock.LockID + "@" + st.LastForceUnlock.Time.UTC().Format(time.RFC3339)
	}
	return []byte(view)
}

// finalize releases the lock of a StateLock being deleted, then removes
// its finalizer. The release is retried until the manager's lock release
// wait has passed since the deletion; then, or when the backend or its
// Secret is gone for that long, the finalizer is removed all the same,
// with a Warning event naming the lock that may still be held: the object
// never stays stuck.
func (r *stateLockReconciler) finalize(ctx context.Context, sl *backendsv1alpha1.StateLock) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(sl, backendsv1alpha1.StateLockFinalizer) {
		return ctrl.Result{}, nil
	}
	key := probes.Key{Kind: backendsv1alpha1.StateLockKind, NamespacedName: client.ObjectKeyFromObject(sl)}
	now := r.opts.clock.Now()
	waitLeft := sl.DeletionTimestamp.Add(r.opts.lockReleaseWait).Sub(now)
	held := "Any lock it took and could not record"
	if sl.Status.LockID != "" {
		held = "Lock " + sl.Status.LockID
	}
	notReleased := func(why string) error {
		r.events.Eventf(sl, nil, corev1.EventTypeWarning, backendsv1alpha1.LockNotReleasedReason, "Finalize",
			"%s of %s %s may still be held: the StateLock was deleted and %s. "+
				"Release it with terraform force-unlock (the backend's status.server says what it does there) or the backend's spec.forceUnlock.lockID.",
			held, sl.Spec.BackendRef.Kind, sl.Spec.BackendRef.Name, why)
		return r.removeFinalizer(ctx, sl)
	}
	giveUp := func(cause string) (ctrl.Result, error) {
		if waitLeft > 0 {
			return ctrl.Result{RequeueAfter: min(waitLeft, maxLockRetry)}, nil
		}
		return ctrl.Result{}, notReleased(fmt.Sprintf("could not release it within %s (%s)", r.opts.lockReleaseWait, cause))
	}

	s := &slockScope{sl: sl}
	if err := r.reconcileBackend(ctx, s); err != nil {
		if sl.Status.LockID == "" {
			// It holds nothing it knows of, and cannot reach the server
			// to look for a lock it did not record.
			r.probes.Forget(key)
			return ctrl.Result{}, r.removeFinalizer(ctx, sl)
		}
		return giveUp(stallMessage(err))
	}
	if sl.Status.LockID == "" && s.resolved.lockWaiting() != "" {
		// It never took a lock: it takes one only once it waits for
		// nothing.
		r.probes.Forget(key)
		return ctrl.Result{}, r.removeFinalizer(ctx, sl)
	}
	start, err := s.startOf(slockOperation{action: slockRelease, held: heldFromStatus(sl), owns: lockOwnedBy(sl), noLossSeen: sl.Status.LockID != ""})
	if err != nil {
		return giveUp(stallMessage(err))
	}
	task := probeTask{kind: backendsv1alpha1.StateLockKind, obj: sl, inputs: fingerprint(append(identity(sl), []byte("finalize"))...),
		interval: lockRetryAfter(sl.DeletionTimestamp.Time, now), condition: backendsv1alpha1.LockedCondition}
	var res *slockResult
	apply := func(p *probes.Result) error {
		v := p.Value.(slockResult)
		res = &v
		return nil
	}
	step, err := r.advanceProbe(ctx, task, apply, start)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case res == nil && waitLeft <= 0:
		// Still queued behind other releases, or waiting on a server that
		// does not answer: the wait is over all the same, whatever the
		// number of StateLocks deleted together.
		r.probes.Forget(key)
		return ctrl.Result{}, notReleased(fmt.Sprintf("could not release it within %s (its UNLOCK was still queued or unanswered)", r.opts.lockReleaseWait))
	case res == nil:
		return ctrl.Result{RequeueAfter: untilWaitEnds(step.requeueAfter, waitLeft)}, nil
	case res.err != nil:
		r.probes.Ack(key, step.ack)
		return giveUp(res.err.Error())
	case res.withheld != "":
		// Not a failure that waiting clears: say so now.
		r.probes.Forget(key)
		return ctrl.Result{}, notReleased("did not release it: " + res.withheld)
	}
	if res.released {
		id := sl.Status.LockID
		if id == "" {
			id = "(taken and not recorded)"
		}
		r.events.Eventf(sl, nil, corev1.EventTypeNormal, backendsv1alpha1.LockReleasedReason, "Finalize",
			"Released lock %s of %s %s: the StateLock was deleted", id, sl.Spec.BackendRef.Kind, sl.Spec.BackendRef.Name)
	}
	r.probes.Forget(key)
	return ctrl.Result{}, r.removeFinalizer(ctx, sl)
}

// untilWaitEnds is when a deleted StateLock's reconcile comes back while
// its release is under way: when the operation asks (requeueAfter, 0 for
// its end's notification only), and at the latest when the lock release
// wait ends (waitLeft), so that the wait bounds the deletion.
func untilWaitEnds(requeueAfter, waitLeft time.Duration) time.Duration {
	if requeueAfter <= 0 || requeueAfter > waitLeft {
		return waitLeft
	}
	return requeueAfter
}

// stallMessage is the message of a stall, or the error's text.
func stallMessage(err error) string {
	if se, ok := conditions.AsStall(err); ok {
		return se.Message
	}
	return err.Error()
}

// removeFinalizer lets the API server delete sl.
func (r *stateLockReconciler) removeFinalizer(ctx context.Context, sl *backendsv1alpha1.StateLock) error {
	if err := client.IgnoreNotFound(r.patchFinalizer(ctx, sl, controllerutil.RemoveFinalizer)); err != nil {
		return fmt.Errorf("removing the finalizer: %w", err)
	}
	return nil
}

// patchFinalizer applies change (controllerutil.AddFinalizer or
// RemoveFinalizer) to sl's StateLock finalizer and patches sl under an
// optimistic lock, so that a concurrent change of its finalizers is not
// overwritten.
func (r *stateLockReconciler) patchFinalizer(ctx context.Context, sl *backendsv1alpha1.StateLock, change func(client.Object, string) bool) error {
	before := sl.DeepCopy()
	change(sl, backendsv1alpha1.StateLockFinalizer)
	return r.client.Patch(ctx, sl, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), owned.FieldOwner)
}

// stateLockBackend is the backendRefIndex extractor of StateLocks: the
// backend whose lock a StateLock holds.
var stateLockBackend = backendRefOf(func(sl *backendsv1alpha1.StateLock) backendsv1alpha1.BackendReference { return sl.Spec.BackendRef })

// setupWithManager registers the reconciler with mgr; the field indexes
// come from SetupAll. A StateLock is reconciled on spec changes, on a new
// value of its reacquire annotation, on its deletion, when its backend's
// spec, Ready or lock holder changes, and when its lock operation ends.
func (r *stateLockReconciler) setupWithManager(mgr ctrl.Manager) error {
	c := watchReader(mgr)
	own, err := controllerFor(mgr, &backendsv1alpha1.StateLock{},
		predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, reacquireRequested(), deletionStarted()))
	if err != nil {
		return err
	}
	b, err := r.setup(mgr, own)
	if err != nil {
		return err
	}
	for _, kind := range backendKinds {
		lockers := enqueueBackendReferrers(c, func() client.ObjectList { return &backendsv1alpha1.StateLockList{} }, kind.name())
		b = b.Watches(kind.newObject(), handler.EnqueueRequestsFromMapFunc(lockers),
			builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, backendLockChanged())))
	}
	return b.
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.maxConcurrentReconciles}).
		Complete(r)
}

// reacquireRequested passes updates that change the reacquire annotation.
func reacquireRequested() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
		return e.ObjectOld.GetAnnotations()[backendsv1alpha1.ReacquireAnnotation] != e.ObjectNew.GetAnnotations()[backendsv1alpha1.ReacquireAnnotation]
	}}
}

// deletionStarted passes the update that marks an object for deletion.
func deletionStarted() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
}

// backendLockChanged passes backend updates that change what its status
// says of the lock (see backendLockView), its Ready status (a broken
// Secret fixed), or its protection finalizer (a StateLock waits for it
// before taking the lock).
func backendLockChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(backendObject)
		after, ok2 := e.ObjectNew.(backendObject)
		if !ok1 || !ok2 {
			return false
		}
		ready := func(b backendObject) string {
			if c := meta.FindStatusCondition(b.SharedStatus().Conditions, backendsv1alpha1.ReadyCondition); c != nil {
				return string(c.Status)
			}
			return ""
		}
		protected := func(b backendObject) bool {
			return controllerutil.ContainsFinalizer(b, backendsv1alpha1.BackendProtectionFinalizer)
		}
		return !bytes.Equal(backendLockView(before), backendLockView(after)) || ready(before) != ready(after) ||
			protected(before) != protected(after)
	}}
}
