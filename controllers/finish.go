package controllers

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/owned"
)

// finishReconcile is the deferred end of every Reconcile: it summarises
// Ready, Reconciling and Stalled from err, patches the status once when it
// changed, emits events for the transitions the patch stored (none when it
// failed: the retry emits them), and turns a stall into no error, so that
// the object waits for a watch event instead of being retried with
// backoff. before is the object as read; the reconciliation changed only
// obj's status.
func finishReconcile[T statusObject](ctx context.Context, c client.Client, recorder events.EventRecorder, transitions eventsFunc, obj, before T, out conditions.Outcome, err error) error {
	if se, ok := conditions.AsStall(err); ok {
		out.Stall = se
	} else {
		out.Err = err
	}
	conds := obj.StatusConditions()
	*obj.StatusObservedGeneration() = conditions.Summarize(conds, obj.GetGeneration(), *before.StatusObservedGeneration(), out)

	if !apiequality.Semantic.DeepEqual(obj.StatusValue(), before.StatusValue()) {
		// The optimistic lock makes a patch computed from a stale cached
		// object fail with a conflict instead of overwriting newer
		// conditions; the retry reads the object again.
		if patchErr := patchStatus(ctx, c, obj, before); patchErr != nil {
			if apierrors.IsInvalid(patchErr) || apierrors.IsRequestEntityTooLargeError(patchErr) {
				return patchRejectedStatus(ctx, c, recorder, transitions, before, patchErr)
			}
			return fmt.Errorf("patching status: %w", patchErr)
		}
	}
	emitTransitions(recorder, transitions, obj, before)
	if out.Stall != nil {
		ctrl.LoggerFrom(ctx).Info("Stalled until the spec or a referenced object changes", "reason", out.Stall.Reason)
		return nil //nolint:nilerr // a stall is recorded as Stalled=True and waits for a change; returning it would requeue
	}
	return err
}

// emitTransitions emits the events of the status changes from before to
// obj, as transitions reports them.
func emitTransitions(recorder events.EventRecorder, transitions eventsFunc, obj, before statusObject) {
	for _, e := range transitions(viewOf(before), viewOf(obj)) {
		recorder.Eventf(obj, nil, e.eventType, e.reason, e.action, "%s", e.note)
	}
}

// patchRejectedStatus handles a status the API server refused: retrying the
// same patch would be refused again, in a loop that re-reads and re-probes.
// It writes the status as it was read, with only the conditions changed to
// a stall (StatusRejected) that says why, and its events. The observations
// of the refused status are dropped; the next probe, spec change or
// referenced object change computes a status again.
func patchRejectedStatus[T statusObject](ctx context.Context, c client.Client, recorder events.EventRecorder, transitions eventsFunc, before T, rejected error) error {
	obj := before.DeepCopyObject().(T)
	out := conditions.Outcome{Stall: &conditions.StallError{Reason: backendsv1alpha1.StatusRejectedReason,
		Message: "The API server refused the status the operator computed: " + owned.APIMessage(rejected)}}
	*obj.StatusObservedGeneration() = conditions.Summarize(obj.StatusConditions(), obj.GetGeneration(), *before.StatusObservedGeneration(), out)
	if err := patchStatus(ctx, c, obj, before); err != nil {
		return fmt.Errorf("patching status after the API server refused it (%w): %w", rejected, err)
	}
	emitTransitions(recorder, transitions, obj, before)
	ctrl.LoggerFrom(ctx).Info("Stalled: the API server refused the status", "reason", backendsv1alpha1.StatusRejectedReason)
	return nil
}
