package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/render"
)

const cosBackendKind = "CosBackend"

// CosBackendReconciler renders CosBackends for runner pods and checks their
// bucket, state object and lock.
type CosBackendReconciler struct {
	client    client.Client
	apiReader client.Reader
	events    events.EventRecorder
	opts      options
	schedule  *probeSchedule
}

// NewCosBackendReconciler returns a reconciler that writes through c and
// reads Secrets through apiReader, which must not be a cache.
func NewCosBackendReconciler(c client.Client, apiReader client.Reader, recorder events.EventRecorder, opts ...Option) *CosBackendReconciler {
	return &CosBackendReconciler{
		client:    c,
		apiReader: apiReader,
		events:    recorder,
		opts:      newOptions(opts),
		schedule:  newProbeSchedule(),
	}
}

// cosScope collects what the phases of one reconciliation read and write.
type cosScope struct {
	// backend is the object; phases set its status.
	backend *backendsv1alpha1.CosBackend
	// region is the region in effect, filled by reconcileRegion.
	region string
	// secrets is the credential material, filled by reconcileCredentials.
	secrets render.CosSecrets
	// readyMessage describes the rendered objects, filled by reconcileRender.
	readyMessage string
	// requeueAfter is the wait until the next probe, set by reconcileProbe.
	requeueAfter time.Duration
}

// cosPhase is one step of the reconciliation. A stallError stops it.
type cosPhase func(ctx context.Context, s *cosScope) error

// Reconcile renders the backend's ConfigMap and credentials Secret, then
// checks the bucket, the state and the lock when a probe is due. Status is
// patched once, at the end, and only when it changed.
func (r *CosBackendReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	backend := &backendsv1alpha1.CosBackend{}
	if err := r.client.Get(ctx, req.NamespacedName, backend); err != nil {
		if apierrors.IsNotFound(err) {
			r.schedule.forget(req.NamespacedName)
			forgetMetrics(cosBackendKind, req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !backend.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	before := backend.DeepCopy()
	scope := &cosScope{backend: backend}
	markReconciling(&backend.Status.Conditions, backend.Generation, backend.Status.ObservedGeneration)
	defer func() {
		out := outcome{readyMessage: scope.readyMessage, probe: cosProbeCondition(backend)}
		retErr = finishReconcile(ctx, r.client, r.events, backend, before, out, retErr)
		if retErr != nil {
			// The next attempt probes again: this one's observations
			// may not have reached the status.
			r.schedule.forget(req.NamespacedName)
			result = ctrl.Result{}
		}
	}()

	for _, phase := range []cosPhase{r.reconcileRegion, r.reconcileCredentials, r.reconcileRender, r.reconcileProbe} {
		if err := phase(ctx, scope); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: scope.requeueAfter}, nil
}

// SetupWithManager registers the reconciler with mgr; the field indexes
// come from SetupAll. Secrets are watched
// for metadata only: the manager never holds their contents.
func (r *CosBackendReconciler) SetupWithManager(mgr ctrl.Manager) error {
	list := func() client.ObjectList { return &backendsv1alpha1.CosBackendList{} }
	return ctrl.NewControllerManagedBy(mgr).
		For(&backendsv1alpha1.CosBackend{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.ConfigMap{}, builder.OnlyMetadata).
		Owns(&corev1.Secret{}, builder.OnlyMetadata).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(enqueueReferrers(mgr.GetClient(), list, secretReference)), builder.OnlyMetadata).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.maxConcurrentReconciles}).
		Named("cosbackend").
		Complete(r)
}

// cosBackendReferences lists the Secrets a CosBackend references, for
// referencesIndex.
func cosBackendReferences(obj client.Object) []string {
	backend, ok := obj.(*backendsv1alpha1.CosBackend)
	if !ok || backend.Spec.CredentialsSecretRef == nil {
		return nil
	}
	return []string{secretReference(backend.Spec.CredentialsSecretRef.Name)}
}
