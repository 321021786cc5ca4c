package controllers

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/owned"
)

// patchProtection adds the backend's protection finalizer when protect is
// true and removes it otherwise, patching obj only when that changes it,
// under an optimistic lock so that a concurrent change of its finalizers
// is not overwritten. The API server refuses a new finalizer on an object
// being deleted, so a backend whose deletion started is never protected
// again.
func (r *reconciler) patchProtection(ctx context.Context, obj client.Object, protect bool) error {
	if controllerutil.ContainsFinalizer(obj, backendsv1alpha1.BackendProtectionFinalizer) == protect {
		return nil
	}
	before := obj.DeepCopyObject().(client.Object)
	if protect {
		controllerutil.AddFinalizer(obj, backendsv1alpha1.BackendProtectionFinalizer)
	} else {
		controllerutil.RemoveFinalizer(obj, backendsv1alpha1.BackendProtectionFinalizer)
	}
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := client.IgnoreNotFound(r.client.Patch(ctx, obj, patch, owned.FieldOwner)); err != nil {
		return fmt.Errorf("patching the finalizer %s: %w", backendsv1alpha1.BackendProtectionFinalizer, err)
	}
	return nil
}

// finalize lets a deleted backend go once none of locks, the StateLocks
// that name it, holds its lock (see deletionBlockers): a StateLock
// releases its lock through its backend, so the backend waits for it,
// as a PersistentVolumeClaim waits for the Pods that use it. Meanwhile
// Ready is False with reason InUse, naming them and what to do; the
// StateLock watch reconciles the backend again when they change.
func (r *backendReconciler) finalize(ctx context.Context, obj backendObject, locks []backendsv1alpha1.StateLock) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, backendsv1alpha1.BackendProtectionFinalizer) {
		return ctrl.Result{}, nil
	}
	blockers := deletionBlockers(locks)
	if len(blockers) == 0 {
		return ctrl.Result{}, r.patchProtection(ctx, obj, false)
	}
	before := obj.DeepCopyObject().(backendObject)
	status := obj.SharedStatus()
	conditions.Set(&status.Conditions, obj.GetGeneration(), backendsv1alpha1.ReadyCondition, inUseObservation(blockers))
	if apiequality.Semantic.DeepEqual(obj.StatusValue(), before.StatusValue()) {
		return ctrl.Result{}, nil
	}
	if err := client.IgnoreNotFound(patchStatus(ctx, r.client, obj, before)); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetryAfter}, nil
		}
		return ctrl.Result{}, fmt.Errorf("patching status: %w", err)
	}
	emitTransitions(r.events, r.transitions, obj, before)
	ctrl.LoggerFrom(ctx).Info("Deletion waits for the StateLocks that hold the backend's lock", "stateLocks", len(blockers))
	return ctrl.Result{}, nil
}
