package controllers

import (
	"context"
	"time"

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
	"github.com/infrastate/backend-operator/controllers/internal/grants"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
	"github.com/infrastate/backend-operator/controllers/internal/related"
)

// remoteStateBackend is the backendRefIndex extractor of RemoteStates:
// the backend of its own namespace a RemoteState reads (producerIndex
// indexes a backend of another namespace).
func remoteStateBackend(obj client.Object) []string {
	rs, ok := obj.(*backendsv1alpha1.RemoteState)
	if !ok || producerOf(rs) != "" {
		return nil
	}
	return []string{backendRefValue(rs.Spec.BackendRef.Kind, rs.Spec.BackendRef.Name)}
}

// newRemoteStateList returns an empty list of RemoteStates.
func newRemoteStateList() client.ObjectList { return &backendsv1alpha1.RemoteStateList{} }

// remoteStateReconciler publishes the outputs of a backend's state to a
// ConfigMap (plain outputs) and a Secret (sensitive outputs).
type remoteStateReconciler struct {
	reconciler
}

// newRemoteStateReconciler returns a reconciler that writes through c and
// reads Secrets through apiReader, which must not be a cache.
func newRemoteStateReconciler(c client.Client, apiReader client.Reader, recorder events.EventRecorder, opts ...Option) *remoteStateReconciler {
	r := &remoteStateReconciler{newReconciler(c, apiReader, recorder, opts)}
	r.forgetMetrics = r.metrics.remoteStateRefresh.forget
	return r
}

// remoteScope collects what the phases of one reconciliation read and write.
type remoteScope struct {
	// remote is the object; phases set its status.
	remote *backendsv1alpha1.RemoteState
	// grant is what the OutputGrants of the backend's namespace grant a
	// RemoteState that reads another namespace, filled by reconcileGrant;
	// nil for one that reads its own.
	grant *grants.Decision
	// newStream builds the reader of the workspace's state, with the
	// backend's own client and settings, filled by reconcileBackend.
	newStream func() (stateStreamer, error)
	// failures are the failure classes of the backend kind's client (see
	// classifyFailure).
	failures []failureClass
	// decrypter decrypts the state with the backend's spec.encryption.
	// Filled by reconcileBackend.
	decrypter stateDecrypter
	// inputs fingerprints everything the read depends on, filled by
	// reconcileBackend: a change makes a read due at once.
	inputs string
	// requeueAfter is the wait until the next read, set by reconcileOutputs.
	requeueAfter time.Duration
	// probePending is true while a read is under way, set by
	// reconcileOutputs.
	probePending bool
	// applied is the probe result written to status, set by the probe
	// phase.
	applied *probes.Result
}

// Reconcile resolves the backend, then reads the state and publishes the
// outputs when a read is due. Status is patched once, at the end. The
// refresh metrics are recorded first, whatever the phases do: a
// RemoteState that stalls is not refreshed either.
func (r *remoteStateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	remote := &backendsv1alpha1.RemoteState{}
	return r.reconcile(ctx, req, remote, backendsv1alpha1.RemoteStateKind, func(ctx context.Context) (outcome, time.Duration, error) {
		r.observeRefresh(remote)
		s := &remoteScope{remote: remote}
		err := runPhases(ctx, s, r.reconcileGrant, r.reconcileSpec, r.reconcileBackend, r.reconcileOutputs)
		return outcome{Outcome: conditions.Outcome{ReadyMessage: "Outputs are published", Gates: remoteStateGates, ProbePending: s.probePending}, applied: s.applied},
			s.requeueAfter, err
	})
}

// observeRefresh records the refresh interval of remote and, for one the
// manager has no record of, its last success as its status tells (see
// lastSuccessSeed).
func (r *remoteStateReconciler) observeRefresh(remote *backendsv1alpha1.RemoteState) {
	now := r.opts.clock.Now()
	r.metrics.remoteStateRefresh.observe(client.ObjectKeyFromObject(remote), remoteStateInterval(remote, r.opts.defaultProbeInterval),
		func() time.Time { return lastSuccessSeed(remote, now) })
}

// remoteStateGates are the conditions that gate a RemoteState's Ready.
var remoteStateGates = []string{backendsv1alpha1.OutputsReadyCondition}

// setupWithManager registers the reconciler with mgr; the field indexes
// come from SetupAll. The backends of every kind are watched for spec
// changes, Secrets and ConfigMaps for metadata only (those the backends
// reference, and those the RemoteStates publish to, which a foreign object
// may hold), and the object is reconciled again when its read ends. The
// creation of what it publishes does not reconcile it again (see
// referrersOf). The OutputGrants, and the labels of namespaces where the
// manager reads them, decide again what the RemoteStates reading another
// namespace may publish.
func (r *remoteStateReconciler) setupWithManager(mgr ctrl.Manager) error {
	c := watchReader(mgr)
	own, err := controllerFor(mgr, &backendsv1alpha1.RemoteState{}, predicate.GenerationChangedPredicate{})
	if err != nil {
		return err
	}
	b, err := r.setup(mgr, own)
	if err != nil {
		return err
	}
	for _, kind := range backendKinds {
		b = b.Watches(kind.newObject(), handler.EnqueueRequestsFromMapFunc(readersOfBackend(c, kind.name())),
			builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	}
	b = b.Watches(&backendsv1alpha1.OutputGrant{}, handler.EnqueueRequestsFromMapFunc(readersOfGrants(c)), builder.WithPredicates(grantChanged()))
	if r.opts.namespaceLabels != nil {
		b = b.WatchesRawSource(r.opts.namespaceLabels.Source(handler.EnqueueRequestsFromMapFunc(crossNamespaceReadersIn(c))))
	}
	return b.
		WatchesRawSource(storageReleases{ledger: r.opts.tenantBudgets.stored, kind: backendsv1alpha1.RemoteStateKind, due: r.schedule.Expire}).
		WatchesRawSource(r.opts.related.Source("Secret", referrersOf(backendsv1alpha1.RemoteStateKind, readersOfReferenced(c, related.SecretReference)))).
		WatchesRawSource(r.opts.related.Source("ConfigMap", referrersOf(backendsv1alpha1.RemoteStateKind, readersOfReferenced(c, related.ConfigMapReference)))).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.maxConcurrentReconciles}).
		Complete(r)
}

// readersOfBackend maps a backend to the RemoteStates that read it: those
// of its namespace, and those of others.
func readersOfBackend(c client.Reader, kind string) handler.MapFunc {
	own := enqueueBackendReferrers(c, newRemoteStateList, kind)
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		return append(own(ctx, obj), readersOfProducerBackend(ctx, c, kind, obj.GetNamespace(), obj.GetName())...)
	}
}

// readersOfReferenced maps a Secret or a ConfigMap (reference names its
// kind) to the RemoteStates that publish to it, and to those whose backend
// references it, in its namespace or another: its appearance, change or
// deletion (rotated credentials, a passphrase) can clear their stall or
// make a read due.
func readersOfReferenced(c client.Reader, reference func(string) string) handler.MapFunc {
	publishers := enqueueReferrers(c, newRemoteStateList, reference)
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		requests := publishers(ctx, obj)
		for _, kind := range backendKinds {
			for _, backend := range writersAndReferrers(c, kind, reference)(ctx, obj) {
				requests = append(requests, indexedRequests(ctx, c, newRemoteStateList, backend.Namespace, backendRefIndex, backendRefValue(kind.name(), backend.Name))...)
				requests = append(requests, readersOfProducerBackend(ctx, c, kind.name(), backend.Namespace, backend.Name)...)
			}
		}
		return requests
	}
}

// remoteStateReferences are the references of the ConfigMap and the Secret
// a RemoteState publishes to, for related.ReferencesIndex.
func remoteStateReferences(obj client.Object) []string {
	rs, ok := obj.(*backendsv1alpha1.RemoteState)
	if !ok {
		return nil
	}
	cm, secret := remoteStateTargets(rs)
	return []string{related.ConfigMapReference(cm), related.SecretReference(secret)}
}
