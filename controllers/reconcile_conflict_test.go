package controllers

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// conflictingStatusPatches answers the first n status patches of an
// HttpBackend that carry a StateReachable condition with a conflict, as
// the API server does when the object changed since it was read.
func conflictingStatusPatches(n int) *interceptor.Funcs {
	return &interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			b, err := patchedHttpBackend(ctx, c, obj, patch)
			if err != nil {
				return err
			}
			if n > 0 && meta.FindStatusCondition(b.Status.Conditions, backendsv1alpha1.StateReachableCondition) != nil {
				n--
				return apierrors.NewConflict(schema.GroupResource{Group: backendsv1alpha1.GroupVersion.Group, Resource: "httpbackends"},
					b.Name, errObjectModified)
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}

// errObjectModified is the detail of the conflicts the interceptor
// answers.
var errObjectModified = errors.New("the object has been modified; please apply your changes to the latest version and try again")

// TestReconcileStatusConflict checks that a status patch meeting a
// conflict is retried after conflictRetryAfter without an error, emits no
// event, and loses nothing: the retry writes the probe's result without
// probing again.
func TestReconcileStatusConflict(t *testing.T) {
	retry := requeueWithin(conflictRetryAfter, conflictRetryAfter)
	cases := map[string]reconcileCase{
		"the probe result meets a conflict": {
			objects:   []client.Object{newWebBackend(), passwordSecret()},
			intercept: conflictingStatusPatches(1),
			target:    webBackend,
			steps: []reconcileStep{{
				name:           "the probe is submitted",
				wantConditions: webProgressing,
				wantCalls:      []string{"FetchSummary"},
			}, {
				name:           "its result meets a conflict",
				do:             awaitProbeAndReconcile,
				wantRequeue:    retry,
				wantConditions: webProgressing,
			}, {
				name:           "the retry writes it",
				wantRequeue:    requeueWithin(DefaultProbeInterval, DefaultProbeInterval*11/10),
				wantConditions: reachable,
			}},
		},
		"the probe result meets conflicts twice": {
			objects:   []client.Object{newWebBackend(), passwordSecret()},
			intercept: conflictingStatusPatches(2),
			target:    webBackend,
			steps: []reconcileStep{{
				wantCalls: []string{"FetchSummary"},
			}, {
				do:             awaitProbeAndReconcile,
				wantRequeue:    retry,
				wantConditions: webProgressing,
			}, {
				wantRequeue:    retry,
				wantConditions: webProgressing,
			}, {
				wantConditions: reachable,
			}},
		},
	}
	runReconcileCases(t, cases)
}
