package controllers

import (
	"context"
	"time"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/render"
)

const cosBackendKind = "CosBackend"

// CosBackendReconciler renders CosBackends for runner pods and checks their
// bucket, state object and lock.
type CosBackendReconciler struct {
	reconciler
}

// NewCosBackendReconciler returns a reconciler that writes through c and
// reads Secrets through apiReader, which must not be a cache.
func NewCosBackendReconciler(c client.Client, apiReader client.Reader, recorder events.EventRecorder, opts ...Option) *CosBackendReconciler {
	return &CosBackendReconciler{newReconciler(c, apiReader, recorder, opts)}
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
	// probePending is true while a probe is under way, set by
	// reconcileProbe.
	probePending bool
	// applied is the probe result written to status, set by the probe
	// phase.
	applied *probeResult
}

// Reconcile renders the backend's ConfigMap and credentials Secret, then
// checks the bucket, the state and the lock when a probe is due. Status is
// patched once, at the end, and only when it changed.
func (r *CosBackendReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	backend := &backendsv1alpha1.CosBackend{}
	return r.reconcile(ctx, req, backend, cosBackendKind, func(ctx context.Context) (outcome, time.Duration, error) {
		s := &cosScope{backend: backend}
		err := runPhases(ctx, s, r.reconcileSpec, r.reconcileRegion, r.reconcileCredentials, r.reconcileRender, r.reconcileProbe)
		return outcome{readyMessage: s.readyMessage, probe: cosProbeCondition(backend), probePending: s.probePending, applied: s.applied}, s.requeueAfter, err
	})
}

// SetupWithManager registers the reconciler with mgr; the field indexes
// come from SetupAll. Secrets and ConfigMaps are watched for metadata
// only: the manager never holds their contents.
func (r *CosBackendReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return setupBackendController(mgr, &r.reconciler, r, "cosbackend", &backendsv1alpha1.CosBackend{},
		func() client.ObjectList { return &backendsv1alpha1.CosBackendList{} })
}

// cosBackendReferences lists the Secrets a CosBackend references, and the
// ConfigMap and Secret it renders, for referencesIndex.
func cosBackendReferences(obj client.Object) []string {
	backend, ok := obj.(*backendsv1alpha1.CosBackend)
	if !ok {
		return nil
	}
	refs := renderedReferences(backend.Name, backend.Spec.ConfigMapName)
	if ref := backend.Spec.CredentialsSecretRef; ref != nil {
		refs = append(refs, secretReference(ref.Name))
	}
	return refs
}
