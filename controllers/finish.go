package controllers

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// statusObject is a kind of this API whose status has conditions and an
// observed generation.
type statusObject interface {
	client.Object
	StatusConditions() *[]metav1.Condition
	StatusObservedGeneration() *int64
}

// finishReconcile is the deferred end of every Reconcile: it summarises
// Ready, Reconciling and Stalled from err, emits events for transitions,
// patches the status once when it changed, and turns a stall into no
// error, so that the object waits for a watch event instead of being
// requeued. before is the object as read; the reconciliation changed only
// obj's status.
func finishReconcile[T statusObject](ctx context.Context, c client.Client, recorder events.EventRecorder, obj, before T, out outcome, err error) error {
	if se, ok := asStall(err); ok {
		out.stall = se
	} else {
		out.err = err
	}
	conds := obj.StatusConditions()
	*obj.StatusObservedGeneration() = summarize(conds, obj.GetGeneration(), *before.StatusObservedGeneration(), out)

	for _, e := range transitionEvents(*before.StatusConditions(), *conds) {
		recorder.Eventf(obj, nil, e.eventType, e.reason, e.action, "%s", e.note)
	}
	if !apiequality.Semantic.DeepEqual(obj, before) {
		// The optimistic lock makes a patch computed from a stale cached
		// object fail with a conflict instead of overwriting newer
		// conditions; the retry reads the object again.
		patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
		if patchErr := c.Status().Patch(ctx, obj, patch, fieldOwner); patchErr != nil {
			if apierrors.IsInvalid(patchErr) || apierrors.IsRequestEntityTooLargeError(patchErr) {
				return patchRejectedStatus(ctx, c, before, patchErr)
			}
			return fmt.Errorf("patching status: %w", patchErr)
		}
	}
	if out.stall != nil {
		ctrl.LoggerFrom(ctx).Info("Stalled until the spec or a referenced object changes", "reason", out.stall.reason)
		return nil
	}
	return err
}

// patchRejectedStatus handles a status the API server refused: retrying the
// same patch would be refused again, in a loop that re-reads and re-probes.
// It writes the status as it was read, with only the conditions changed to
// a stall (StatusRejected) that says why, and no requeue: the next spec or
// referenced object change tries again.
func patchRejectedStatus[T statusObject](ctx context.Context, c client.Client, before T, rejected error) error {
	obj := before.DeepCopyObject().(T)
	out := outcome{stall: &stallError{reason: backendsv1alpha1.StatusRejectedReason,
		message: "The API server refused the status the operator computed: " + apiMessage(rejected)}}
	*obj.StatusObservedGeneration() = summarize(obj.StatusConditions(), obj.GetGeneration(), *before.StatusObservedGeneration(), out)
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := c.Status().Patch(ctx, obj, patch, fieldOwner); err != nil {
		return fmt.Errorf("patching status after the API server refused it (%w): %w", rejected, err)
	}
	ctrl.LoggerFrom(ctx).Info("Stalled: the API server refused the status", "reason", backendsv1alpha1.StatusRejectedReason)
	return nil
}
