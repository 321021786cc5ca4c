package controllers

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
)

// +kubebuilder:rbac:groups=backends.infrastate.io,resources=statehistories,verbs=get;list;watch
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=statehistories/status,verbs=patch
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=staterestores,verbs=get;list;watch
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=staterestores/status,verbs=patch

// stateRestoreGates are the conditions that gate a StateRestore's Ready:
// it is Ready once its snapshot is written.
var stateRestoreGates = []string{backendsv1alpha1.RestoredCondition}

// stateRestoreReconciler writes a StateHistory's snapshot back to its
// source, once: under the source's lock, which it waits for like a
// StateLock and never forces, as a serial above the source's.
type stateRestoreReconciler struct {
	reconciler
}

// newStateRestoreReconciler returns a reconciler that writes through c and
// reads Secrets through apiReader, which must not be a cache.
func newStateRestoreReconciler(c client.Client, apiReader client.Reader, recorder events.EventRecorder, opts ...Option) *stateRestoreReconciler {
	return &stateRestoreReconciler{newReconciler(c, apiReader, recorder, opts)}
}

// restoreScope collects what the phases of one reconciliation read and
// write.
type restoreScope struct {
	// sr is the object; phases set its status.
	sr *backendsv1alpha1.StateRestore
	// h is its history, filled by reconcileRestoreHistory.
	h *backendsv1alpha1.StateHistory
	// run builds the restore, and failures are the failure classes of
	// the source's kind: filled by reconcileRestoreTargets.
	run      func() (probes.Func, error)
	failures []failureClass
	// waiting is the Reconciling condition while the restore waits for
	// the lock.
	waiting *conditions.Observation
	// requeueAfter, probePending and applied are set by reconcileRestore.
	requeueAfter time.Duration
	probePending bool
	applied      *probes.Result
}

// Reconcile restores the snapshot once. A restore that is done, or was
// refused, does nothing more: its spec cannot change.
func (r *stateRestoreReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sr := &backendsv1alpha1.StateRestore{}
	return r.reconcile(ctx, req, sr, backendsv1alpha1.StateRestoreKind, func(ctx context.Context) (outcome, time.Duration, error) {
		s := &restoreScope{sr: sr}
		err := runPhases(ctx, s, r.reconcileRestoreDone, r.reconcileRestoreHistory, r.reconcileRestoreTargets, r.reconcileRestore)
		if err != nil && !errors.Is(err, errRestoreFinished) {
			return outcome{Outcome: conditions.Outcome{Gates: stateRestoreGates, ProbePending: s.probePending}, applied: s.applied}, s.requeueAfter, err
		}
		out, err := stateRestoreEnd(sr, s.waiting)
		out.ProbePending = s.probePending
		return outcome{Outcome: out, applied: s.applied}, s.requeueAfter, err
	})
}

// stateRestoreEnd is how a StateRestore's reconciliation ends once its
// phases ran: Ready from its Restored condition; Reconciling while it
// waits for the lock (its own, or waiting, what the backend must learn
// first); and a stall once it was refused for good.
func stateRestoreEnd(sr *backendsv1alpha1.StateRestore, waiting *conditions.Observation) (conditions.Outcome, error) {
	out := conditions.Outcome{ReadyMessage: restoredMessage(sr), ReadyReason: backendsv1alpha1.RestoredReason, Gates: stateRestoreGates}
	c := meta.FindStatusCondition(sr.Status.Conditions, backendsv1alpha1.RestoredCondition)
	if waiting == nil && c != nil && c.Reason == backendsv1alpha1.WaitingForLockReason {
		waiting = &conditions.Observation{Status: metav1.ConditionTrue, Reason: c.Reason, Message: c.Message}
	}
	if waiting != nil {
		w := *waiting
		w.Status = metav1.ConditionTrue
		out.Waiting = &w
		notReady := *waiting
		notReady.Status = metav1.ConditionFalse
		out.NotReady = &notReady
	}
	if restoreFinished(c) && c.Status != metav1.ConditionTrue {
		return out, conditions.Stall(c.Reason, "%s", c.Message)
	}
	return out, nil
}

// setupWithManager registers the reconciler with mgr; histories and
// backends are watched for changes that let a waiting restore go on.
func (r *stateRestoreReconciler) setupWithManager(mgr ctrl.Manager) error {
	c := watchReader(mgr)
	own, err := controllerFor(mgr, &backendsv1alpha1.StateRestore{}, predicate.GenerationChangedPredicate{})
	if err != nil {
		return err
	}
	b, err := r.setup(mgr, own)
	if err != nil {
		return err
	}
	b = b.Watches(&backendsv1alpha1.StateHistory{}, handler.EnqueueRequestsFromMapFunc(enqueueBackendReferrers(c, newStateRestoreList, backendsv1alpha1.StateHistoryKind)),
		builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	for _, kind := range backendKinds {
		b = b.Watches(kind.newObject(), handler.EnqueueRequestsFromMapFunc(restoresOfBackend(c, kind.name())),
			builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	}
	return b.
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.maxConcurrentReconciles}).
		Complete(r)
}

// restoresOfBackend maps a backend to the restores of the histories whose
// source or destination it is: its creation or its fix can let a stalled
// restore go on.
func restoresOfBackend(c client.Reader, kind string) handler.MapFunc {
	histories := enqueueBackendReferrers(c, newStateHistoryList, kind)
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var requests []reconcile.Request
		for _, h := range histories(ctx, obj) {
			requests = append(requests, indexedRequests(ctx, c, newStateRestoreList, h.Namespace, backendRefIndex, backendRefValue(backendsv1alpha1.StateHistoryKind, h.Name))...)
		}
		return requests
	}
}

// newStateRestoreList returns an empty list of StateRestores.
func newStateRestoreList() client.ObjectList { return &backendsv1alpha1.StateRestoreList{} }

// stateRestoreHistory is the backendRefIndex extractor of StateRestores:
// the history they restore from.
func stateRestoreHistory(obj client.Object) []string {
	sr, ok := obj.(*backendsv1alpha1.StateRestore)
	if !ok {
		return nil
	}
	return []string{backendRefValue(backendsv1alpha1.StateHistoryKind, sr.Spec.HistoryRef.Name)}
}

// reconcileRestoreDone ends a restore that wrote its snapshot or was
// refused: it never runs twice.
func (r *stateRestoreReconciler) reconcileRestoreDone(_ context.Context, s *restoreScope) error {
	if c := meta.FindStatusCondition(s.sr.Status.Conditions, backendsv1alpha1.RestoredCondition); c != nil && restoreFinished(c) {
		return errRestoreFinished
	}
	return nil
}

// reconcileRestoreHistory reads the history; a missing one is a stall.
func (r *stateRestoreReconciler) reconcileRestoreHistory(ctx context.Context, s *restoreScope) error {
	h := &backendsv1alpha1.StateHistory{}
	key := types.NamespacedName{Namespace: s.sr.Namespace, Name: s.sr.Spec.HistoryRef.Name}
	if err := r.client.Get(ctx, key, h); err != nil {
		if client.IgnoreNotFound(err) == nil {
			if err := r.checkOtherShard(ctx, h, key, backendsv1alpha1.StateHistoryKind); err != nil {
				return err
			}
			return conditions.Stall(backendsv1alpha1.HistoryNotFoundReason, "StateHistory %s, which spec.historyRef names, does not exist in namespace %s: create it, "+
				"or create another StateRestore naming one that exists", key.Name, key.Namespace)
		}
		return err
	}
	s.h = h
	return nil
}

// reconcileRestoreTargets resolves the history's source and destination
// with the history's own reconciler rules, and the source's locker.
func (r *stateRestoreReconciler) reconcileRestoreTargets(ctx context.Context, s *restoreScope) error {
	hs := &historyScope{h: s.h}
	if err := r.reconcileHistoryDestination(ctx, hs); err != nil {
		return err
	}
	ref := s.h.Spec.BackendRef
	kind, _, resolved, err := r.resolveBackendRef(ctx, s.h.Namespace, ref)
	if err != nil {
		return err
	}
	s.failures = kind.failures()
	if why := resolved.lockWaiting(); why != "" {
		obs := conditions.Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.WaitingForLockReason, Message: why}
		s.waiting = &obs
		s.requeueAfter = learnRetry
		return nil
	}
	workspace := workspaceOrDefault(s.h.Spec.Workspace)
	prefix, spec := historyPrefix(s.h), s.sr.Spec
	info := newRestoreLockInfo(s.sr, s.h)
	s.run = func() (probes.Func, error) {
		stream, err := resolved.openState(workspace)
		if err != nil {
			return nil, err
		}
		write, err := resolved.writer(workspace)
		if err != nil {
			return nil, err
		}
		store, err := hs.store()
		if err != nil {
			return nil, err
		}
		locker, err := resolved.locker(workspace, s.sr)
		if err != nil {
			return nil, err
		}
		targets := restoreTargets{locker: locker, info: info, source: stream, write: write, store: store, prefix: prefix}
		return func(ctx context.Context) any { return runRestore(ctx, targets, spec) }, nil
	}
	return nil
}

// reconcileRestore runs the restore off the reconcile path, retrying
// while another holds the lock, and writes its result to status.
func (r *stateRestoreReconciler) reconcileRestore(ctx context.Context, s *restoreScope) error {
	if s.run == nil {
		return nil
	}
	sr := s.sr
	task := probeTask{kind: backendsv1alpha1.StateRestoreKind, obj: sr, inputs: fingerprint(identity(sr)...), interval: learnRetry,
		condition: backendsv1alpha1.RestoredCondition}
	apply := func(res *probes.Result) error {
		run := res.Value.(restoreRun)
		obs := applyRestoreRun(&sr.Status, run, s.h.Name, historyPrefix(s.h), sr.Spec, s.failures, r.opts.clock.Now())
		conditions.Set(&sr.Status.Conditions, sr.Generation, backendsv1alpha1.RestoredCondition, obs)
		return nil
	}
	step, err := r.advanceProbe(ctx, task, apply, s.run)
	s.requeueAfter, s.probePending, s.applied = step.requeueAfter, step.pending, step.ack
	if restoreFinished(meta.FindStatusCondition(sr.Status.Conditions, backendsv1alpha1.RestoredCondition)) {
		s.requeueAfter = 0
	}
	return err
}

// errRestoreFinished ends the phases of a restore that is done.
var errRestoreFinished = errors.New("the restore is finished")

// restoreFinished reports whether c, a Restored condition, ends the
// restore: it is written, or refused for a reason no retry changes.
func restoreFinished(c *metav1.Condition) bool {
	if c == nil {
		return false
	}
	if c.Status == metav1.ConditionTrue {
		return true
	}
	switch c.Reason {
	case backendsv1alpha1.SnapshotNotFoundReason, backendsv1alpha1.SnapshotUnusableReason, backendsv1alpha1.LineageMismatchReason, backendsv1alpha1.StateEncryptedReason, backendsv1alpha1.InvalidSpecReason:
		return true
	}
	return false
}

// restoredMessage is a StateRestore's Ready message once it is written.
func restoredMessage(sr *backendsv1alpha1.StateRestore) string {
	if c := meta.FindStatusCondition(sr.Status.Conditions, backendsv1alpha1.RestoredCondition); c != nil && c.Status == metav1.ConditionTrue {
		return c.Message
	}
	return "The snapshot is written"
}
