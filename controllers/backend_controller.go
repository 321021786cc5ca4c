package controllers

import (
	"errors"
	"strconv"

	"context"
	"time"

	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/owned"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/render"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// backendReconciler renders the backends of one kind for runner pods and
// probes the state they hold. Everything specific to the kind comes from
// kind.
type backendReconciler struct {
	reconciler
	kind backendKind
}

// backendScope collects what the phases of one reconciliation read and
// write.
type backendScope struct {
	// obj is the backend; phases set its status.
	obj backendObject
	// resolved is the backend with its references read, filled by
	// reconcileReferences.
	resolved resolvedBackend
	// readyMessage describes the rendered objects, filled by
	// reconcileRender.
	readyMessage string
	// requeueAfter is the wait until the next probe, set by
	// reconcileProbe.
	requeueAfter time.Duration
	// probePending is true while a probe is under way, set by
	// reconcileProbe.
	probePending bool
	// applied is the probe result written to status, set by
	// reconcileProbe.
	applied *probes.Result
	// stateLocks are the StateLocks that name the backend, read before
	// the phases.
	stateLocks []backendsv1alpha1.StateLock
	// restoring is true while a StateRestore writes to the backend, read
	// before the phases.
	restoring bool
}

// Reconcile renders the backend's ConfigMap and credentials Secret, then
// probes its state when a probe is due. Status is patched once, at the
// end, and only when it changed.
func (r *backendReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.kind.newObject()
	if found, err := r.get(ctx, req, obj, r.kind.name()); !found {
		return ctrl.Result{}, err
	}
	locks, err := r.stateLocksOf(ctx, r.kind.name(), obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return r.finalize(ctx, obj, locks)
	}
	// A StateLock takes a lock only through a protected backend (see
	// BackendProtectionFinalizer).
	if err := r.patchProtection(ctx, obj, len(locks) > 0); err != nil {
		return ctrl.Result{}, err
	}
	restoring, err := r.restoresPending(ctx, r.kind.name(), obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	return r.reconcileObject(ctx, req, obj, r.kind.name(), func(ctx context.Context) (outcome, time.Duration, error) {
		s := &backendScope{obj: obj, stateLocks: locks, restoring: restoring}
		err := runPhases(ctx, s, r.reconcileSpec, r.reconcileReferences, r.reconcileRender, r.reconcileProbe)
		r.metrics.forgetReachableWhenStalled(r.kind.name(), obj, err)
		obj.SharedStatus().Locked = lockedWord(obj.SharedStatus().Conditions)
		return outcome{Outcome: conditions.Outcome{ReadyMessage: s.readyMessage, Gates: r.kind.readyGates(), ProbePending: s.probePending}, applied: s.applied},
			s.requeueAfter, err
	})
}

// reconcileSpec refuses, as a stall, a spec the admission rules would
// refuse today but that was stored before they existed.
func (r *backendReconciler) reconcileSpec(_ context.Context, s *backendScope) error {
	return r.kind.checkSpec(s.obj)
}

// reconcileReferences reads and checks the Secrets and ConfigMaps the
// backend references (a problem is a stall naming the object and
// key, never a value) and fills scope.resolved.
func (r *backendReconciler) reconcileReferences(ctx context.Context, s *backendScope) error {
	resolved, err := r.kind.resolve(ctx, r.envFor(ctx, s.obj.GetNamespace()), s.obj)
	if err != nil {
		return err
	}
	s.resolved = resolved
	return nil
}

// reconcileRender renders the backend into its ConfigMap and credentials
// Secret, writing only what changed, and records their names in
// status.rendered. A render error, a name taken by a foreign object or
// objects the namespace's API storage share cannot hold (BudgetExceeded)
// is a stall; the previous render is left as it was.
//
// A backend whose last render came from the same inputs, and whose objects
// stand as the operator wrote them, is not rendered again (see
// owned.Memo).
func (r *backendReconciler) reconcileRender(ctx context.Context, s *backendScope) error {
	configMapName := r.kind.configMapName(s.obj)
	inputs := fingerprint(append(append(identity(s.obj), s.resolved.inputs()...), []byte(configMapName))...)
	if message, ok := r.unchangedRender(ctx, s.obj, r.kind.name(), inputs); ok {
		s.readyMessage = message
		return nil
	}
	r.renders.Forget(owned.WriterKey{Kind: r.kind.name(), NamespacedName: client.ObjectKeyFromObject(s.obj)})
	files, credentials, err := s.resolved.render()
	if errors.Is(err, render.ErrUnsupportedByRunner) {
		return conditions.Stall(backendsv1alpha1.UnsupportedByRunnerReason, "Cannot render the backend configuration: %v", err)
	}
	if err != nil {
		return conditions.Stall(backendsv1alpha1.InvalidSpecReason, "Cannot render the backend configuration: %v", err)
	}
	s.readyMessage, err = r.writeRendered(ctx, s.obj, r.kind.name(), configMapName, inputs, files, credentials)
	return err
}

// reconcileProbe probes the backend as its kind says (see probePlan). The
// reads run off the reconcile path (see prober): a due probe is
// submitted, and the reconcile that its end triggers applies what it
// learned to status. It sets scope.requeueAfter to the next probe (brought
// forward to when the lockPolicy releases a gone holder the status names:
// see holderReleaseAt) and scope.probePending while one is
// under way, and infrastate_backend_reachable from the probe condition
// (see recordReachable).
func (r *backendReconciler) reconcileProbe(ctx context.Context, s *backendScope) error {
	obj, status := s.obj, s.obj.SharedStatus()
	interval := probeInterval(r.kind.probeSpec(obj), r.opts.defaultProbeInterval)
	lockUsers := len(s.stateLocks) > 0 || s.restoring
	plan := s.resolved.probe(interval, lockUsers)
	if plan.off != nil {
		conditions.Set(&status.Conditions, obj.GetGeneration(), plan.condition, *plan.off)
		status.State = nil
		r.metrics.stateSize.DeleteLabelValues(r.kind.name(), obj.GetNamespace(), obj.GetName())
	}
	key := probes.Key{Kind: r.kind.name(), NamespacedName: client.ObjectKeyFromObject(obj)}
	if plan.lockUnchecked != "" {
		// Written before the probe's result, which does not touch the
		// lock: whatever the probe learns, the lock is the StateLocks'.
		applyUncheckedLock(r.metrics, obj, r.kind.name(), holderOfProbedState(s.stateLocks), plan.lockUnchecked)
	}
	if plan.start == nil {
		r.metrics.recordReachable(r.kind.name(), obj, plan)
		r.probes.Forget(key)
		return nil
	}
	r.metrics.seedLockSeries(r.kind.name(), obj, plan.lockPolicy)

	// StateLocks appearing make a probe due at once: it may have to learn
	// what the server does with locks before they take one.
	inputs := fingerprint(append(append(identity(obj), s.resolved.inputs()...), []byte(strconv.FormatBool(lockUsers)))...)
	if plan.lockUnchecked == "" {
		// A StateLock taking or releasing the lock the probe reads makes
		// a probe due at once.
		inputs = fingerprint([]byte(inputs), stateLocksView(s.stateLocks))
	}
	task := probeTask{kind: r.kind.name(), obj: obj, inputs: inputs, interval: interval, condition: plan.condition}
	apply := func(res *probes.Result) error {
		plan.apply(res.Value, res.Finished)
		return nil
	}
	step, err := r.advanceProbe(ctx, task, apply, plan.start)
	r.metrics.recordReachable(r.kind.name(), obj, plan)
	s.requeueAfter, s.probePending, s.applied = step.requeueAfter, step.pending, step.ack
	if err == nil && !s.probePending {
		at := holderReleaseAt(status, plan.lockPolicy)
		if learnAt := r.opts.clock.Now().Add(learnRetry); plan.learnPending && (at.IsZero() || learnAt.Before(at)) {
			at = learnAt
		}
		if !at.IsZero() {
			if wait, ok := r.schedule.PullIn(key.NamespacedName, inputs, at, r.opts.clock.Now()); ok && (s.requeueAfter <= 0 || wait < s.requeueAfter) {
				s.requeueAfter = wait
			}
		}
	}
	return err
}

// setupWithManager registers the reconciler with mgr; the field indexes
// and the related watches come from SetupAll. It reconciles on spec
// changes of the backend, when a StateLock that names it comes, goes,
// takes or releases its lock (see stateLockHoldingChanged), when a
// StateRestore writing to it comes, goes or finishes (see
// restoreFinishedChanged), on changes to the Secrets and ConfigMaps that a
// backend references or renders, through related.ReferencesIndex (a foreign
// object that took a rendered name among them; not the creation of its
// own rendered objects: see referrersOf), when one of its probes
// ends, and when API storage is given back in its namespace after its
// render was refused (see storageReleases). Rendered and referenced objects are watched for metadata only
// (see relatedObjects): the manager never holds their contents. When the
// manager starts, the backends Ready at their generation are reconciled
// after the new and changed ones (see firstListPriority).
func (r *backendReconciler) setupWithManager(mgr ctrl.Manager) error {
	own, err := controllerFor(mgr, r.kind.newObject(), predicate.GenerationChangedPredicate{})
	if err != nil {
		return err
	}
	b, err := r.setup(mgr, own)
	if err != nil {
		return err
	}
	c := watchReader(mgr)
	referrers := func(reference func(string) string) handler.EventHandler {
		return referrersOf(r.kind.name(), writersAndReferrers(c, r.kind, reference))
	}
	return b.
		Watches(&backendsv1alpha1.StateLock{}, handler.EnqueueRequestsFromMapFunc(lockedBackend(r.kind.name())),
			builder.WithPredicates(stateLockHoldingChanged())).
		Watches(&backendsv1alpha1.StateRestore{}, handler.EnqueueRequestsFromMapFunc(restoredBackend(c, r.kind.name())),
			builder.WithPredicates(restoreFinishedChanged())).
		WatchesRawSource(r.opts.related.Source("Secret", referrers(related.SecretReference))).
		WatchesRawSource(r.opts.related.Source("ConfigMap", referrers(related.ConfigMapReference))).
		WatchesRawSource(storageReleases{ledger: r.opts.tenantBudgets.stored, kind: r.kind.name()}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.maxConcurrentReconciles}).
		Complete(r)
}

// backendReferences is the related.ReferencesIndex extractor of a backend kind:
// the Secrets and ConfigMaps an object references, and those it renders,
// but those named after it (see indexedReferences).
func backendReferences(kind backendKind) client.IndexerFunc {
	return func(obj client.Object) []string {
		backend, ok := obj.(backendObject)
		if !ok {
			return nil
		}
		return indexedReferences(backend.GetName(), allReferences(kind, backend))
	}
}
