package controllers

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	}
	for _, ix := range indexes {
		if err := mgr.GetFieldIndexer().IndexField(ctx, ix.obj, ix.field, ix.extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", ix.obj, ix.field, err)
		}
	}

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
