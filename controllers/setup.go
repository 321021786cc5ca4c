package controllers

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// SetupAll registers the field indexes and every reconciler of this
// package with mgr.
func SetupAll(ctx context.Context, mgr ctrl.Manager, opts ...Option) error {
	indexes := []struct {
		obj     client.Object
		field   string
		extract client.IndexerFunc
	}{
		{&backendsv1alpha1.HttpBackend{}, referencesIndex, httpBackendReferences},
		{&backendsv1alpha1.CosBackend{}, referencesIndex, cosBackendReferences},
		{&backendsv1alpha1.RemoteState{}, backendRefIndex, remoteStateBackend},
		{&backendsv1alpha1.RemoteState{}, referencesIndex, remoteStateReferences},
	}
	for _, ix := range indexes {
		if err := mgr.GetFieldIndexer().IndexField(ctx, ix.obj, ix.field, ix.extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", ix.obj, ix.field, err)
		}
	}

	// One prober for every kind: its bounds are the manager's, and each
	// namespace's share of them spans kinds.
	o := newOptions(opts)
	probes := newProber(o.maxConcurrentProbes, o.maxConcurrentProbesPerNamespace, o.clock)
	if err := mgr.Add(probes); err != nil {
		return fmt.Errorf("adding the prober: %w", err)
	}
	opts = append(slices.Clip(opts), withProber(probes)) // never into the caller's array

	recorder := mgr.GetEventRecorder("backend-operator")
	c, reader := mgr.GetClient(), mgr.GetAPIReader()
	if err := NewHttpBackendReconciler(c, reader, recorder, opts...).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the HttpBackend controller: %w", err)
	}
	if err := NewCosBackendReconciler(c, reader, recorder, opts...).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the CosBackend controller: %w", err)
	}
	if err := NewRemoteStateReconciler(c, reader, recorder, opts...).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the RemoteState controller: %w", err)
	}
	return nil
}

// setupBackendController registers a backend reconciler. It reconciles on
// spec changes of the backend, on changes to the objects it renders, on
// changes to the Secrets and ConfigMaps that a backend references or
// renders through referencesIndex (a foreign object that took a rendered
// name among them), and when one of its probes ends. Rendered and
// referenced objects are watched for metadata only.
func setupBackendController(mgr ctrl.Manager, base *reconciler, r reconcile.Reconciler, name string, obj client.Object,
	newList func() client.ObjectList) error {
	b, err := base.setup(mgr, ctrl.NewControllerManagedBy(mgr).
		For(obj, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.ConfigMap{}, builder.OnlyMetadata).
		Owns(&corev1.Secret{}, builder.OnlyMetadata))
	if err != nil {
		return err
	}
	for _, kind := range []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}} {
		reference := secretReference
		if _, ok := kind.(*corev1.ConfigMap); ok {
			reference = configMapReference
		}
		b = b.Watches(kind, handler.EnqueueRequestsFromMapFunc(enqueueReferrers(mgr.GetClient(), newList, reference)), builder.OnlyMetadata)
	}
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: base.opts.maxConcurrentReconciles}).Named(name).Complete(r)
}
