package controllers

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/testenv"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// TestFinishReconcileStatusRejected checks that a status the API server
// refuses is not retried in a loop: the status as read gets a Stalled
// condition that says why, and the reconcile ends without an error.
func TestFinishReconcileStatusRejected(t *testing.T) {
	before := builders.MakeHttpBackend("b", "ns", "").Generation(2).ObservedGeneration(1).Obj()
	before.Status.State = &backendsv1alpha1.StateSummary{Present: true, Serial: 4, Lineage: "old"}
	refusals := 0
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).
		WithObjects(before.DeepCopy()).WithStatusSubresource(&backendsv1alpha1.HttpBackend{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				b, err := patchedHttpBackend(ctx, c, obj, patch)
				if err != nil {
					return err
				}
				if b.Status.State != nil && b.Status.State.Lineage != "old" {
					refusals++
					return apierrors.NewInvalid(schema.GroupKind{Group: "backends.infrastate.io", Kind: "HttpBackend"}, "b",
						field.ErrorList{field.TooLong(field.NewPath("status", "state", "lineage"), "", 128)})
				}
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	read := &backendsv1alpha1.HttpBackend{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(before), read); err != nil {
		t.Fatal(err)
	}
	obj := read.DeepCopy()
	obj.Status.State = &backendsv1alpha1.StateSummary{Present: true, Serial: 5, Lineage: "a lineage the API refuses"}

	recorder := events.NewFakeRecorder(10)
	err := finishReconcile(context.Background(), c, recorder, transitionEvents, obj, read, conditions.Outcome{ReadyMessage: "Rendered"}, nil)
	if err != nil {
		t.Fatalf("finishReconcile() = %v, want nil: a refused status must not be retried", err)
	}
	if refusals != 1 {
		t.Errorf("the refused status was sent %d times, want once", refusals)
	}
	got := &backendsv1alpha1.HttpBackend{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(before), got); err != nil {
		t.Fatal(err)
	}
	stalled := meta.FindStatusCondition(got.Status.Conditions, backendsv1alpha1.StalledCondition)
	if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != backendsv1alpha1.StatusRejectedReason {
		t.Fatalf("Stalled = %+v, want True with reason StatusRejected", stalled)
	}
	if want := "status.state.lineage"; !strings.Contains(stalled.Message, want) {
		t.Errorf("Stalled message %q does not name %s", stalled.Message, want)
	}
	close(recorder.Events)
	var emitted []string
	for e := range recorder.Events {
		emitted = append(emitted, e)
	}
	if len(emitted) != 1 || !strings.HasPrefix(emitted[0], "Warning StatusRejected") {
		t.Errorf("events = %q, want one Warning StatusRejected and no event of the refused status", emitted)
	}
	if got.Status.State.Lineage != "old" || got.Status.ObservedGeneration != 2 {
		t.Errorf("status = %+v, want the observations as read and observedGeneration 2", got.Status)
	}
}
