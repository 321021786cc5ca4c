package controllers

import (
	"context"
	"time"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// +kubebuilder:rbac:groups="",resources=secrets;configmaps,verbs=get;list;watch;create;patch;delete

// HttpBackendReconciler renders HttpBackends for runner pods and probes the
// state they hold.
type HttpBackendReconciler struct {
	reconciler
}

// NewHttpBackendReconciler returns a reconciler that writes through c and
// reads Secrets and ConfigMaps through apiReader, which must not be a cache.
func NewHttpBackendReconciler(c client.Client, apiReader client.Reader, recorder events.EventRecorder, opts ...Option) *HttpBackendReconciler {
	return &HttpBackendReconciler{newReconciler(c, apiReader, recorder, opts)}
}

// httpScope collects what the phases of one reconciliation read and write.
type httpScope struct {
	// backend is the object; phases set its status.
	backend *backendsv1alpha1.HttpBackend
	// secrets is the resolved credential material, filled by
	// reconcileCredentials. It never leaves the process except in the
	// rendered Secret.
	secrets httpSecrets
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
// probes its state when a probe is due. Status is patched once, at the end,
// and only when it changed.
func (r *HttpBackendReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	backend := &backendsv1alpha1.HttpBackend{}
	return r.reconcile(ctx, req, backend, httpBackendKind, func(ctx context.Context) (outcome, time.Duration, error) {
		s := &httpScope{backend: backend}
		err := runPhases(ctx, s, r.reconcileSpec, r.reconcileCredentials, r.reconcileRender, r.reconcileProbe)
		return outcome{readyMessage: s.readyMessage, probe: httpProbeCondition(backend), probePending: s.probePending, applied: s.applied}, s.requeueAfter, err
	})
}

// SetupWithManager registers the reconciler with mgr; the field indexes
// come from SetupAll. Secrets and ConfigMaps are watched for metadata only:
// the manager never holds their contents.
func (r *HttpBackendReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return setupBackendController(mgr, &r.reconciler, r, "httpbackend", &backendsv1alpha1.HttpBackend{},
		func() client.ObjectList { return &backendsv1alpha1.HttpBackendList{} })
}

// httpBackendReferences lists the Secrets and ConfigMaps an HttpBackend
// references or renders, for referencesIndex.
func httpBackendReferences(obj client.Object) []string {
	backend, ok := obj.(*backendsv1alpha1.HttpBackend)
	if !ok {
		return nil
	}
	refs := renderedReferences(backend.Name, backend.Spec.ConfigMapName)
	if ref := backend.Spec.PasswordSecretRef; ref != nil {
		refs = append(refs, secretReference(ref.Name))
	}
	if tls := backend.Spec.TLS; tls != nil {
		if ref := tls.ClientCertificateSecretRef; ref != nil {
			refs = append(refs, secretReference(ref.Name))
		}
		if ca := tls.CACertificate; ca != nil && ca.SecretRef != nil {
			refs = append(refs, secretReference(ca.SecretRef.Name))
		}
		if ca := tls.CACertificate; ca != nil && ca.ConfigMapRef != nil {
			refs = append(refs, configMapReference(ca.ConfigMapRef.Name))
		}
	}
	return refs
}
