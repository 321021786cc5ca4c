package controllers

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clienttesting "k8s.io/client-go/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testenv"
)

// grantEnv is a fake API server holding objects, with the production
// field indexes, that counts status patches.
func grantEnv(t *testing.T, objects ...client.Object) (client.Client, *int) {
	t.Helper()
	scheme := testenv.Scheme()
	tracker := clienttesting.NewObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder())
	builder := fake.NewClientBuilder().WithScheme(scheme).WithObjectTracker(tracker).
		WithStatusSubresource(&backendsv1alpha1.OutputGrant{}, &backendsv1alpha1.RemoteState{}).WithObjects(objects...)
	for _, ix := range fieldIndexes() {
		builder = builder.WithIndex(ix.obj, ix.field, ix.extract)
	}
	patches := 0
	builder = builder.WithInterceptorFuncs(interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			patches++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	return builder.Build(), &patches
}

func TestOutputGrantReconcile(t *testing.T) {
	const hb = backendsv1alpha1.HttpBackendKind
	grantOf := func(to ...backendsv1alpha1.GrantConsumer) *backendsv1alpha1.OutputGrant {
		return &backendsv1alpha1.OutputGrant{ObjectMeta: metav1.ObjectMeta{Name: "network", Namespace: "team-a", Generation: 1},
			Spec:   backendsv1alpha1.OutputGrantSpec{To: to, Outputs: []string{"vpc_id"}},
			Status: backendsv1alpha1.OutputGrantStatus{ObservedGeneration: -1}}
	}
	web := reading("team-b", "web", "team-a", "network", "vpc_id", "zone")
	labels := fixedLabels{labels: map[string]map[string]string{"team-b": {"outputs": "network"}}}
	cases := map[string]struct {
		grant     *backendsv1alpha1.OutputGrant
		opts      []Option
		labels    namespaceLabeler
		want      []metav1.Condition
		consumers []backendsv1alpha1.GrantConsumerStatus
	}{
		"Ready, with its consumers": {
			grant:  grantOf(backendsv1alpha1.GrantConsumer{Namespace: "team-b"}),
			labels: labels,
			want:   []metav1.Condition{wantCond("Ready", metav1.ConditionTrue, backendsv1alpha1.SucceededReason)},
			consumers: []backendsv1alpha1.GrantConsumerStatus{{Namespace: "team-b", Name: "web",
				Backend: backendsv1alpha1.BackendReference{Kind: hb, Name: "network"}, Outputs: []string{"vpc_id"}}},
		},
		"a named namespace the manager does not watch": {
			grant:  grantOf(backendsv1alpha1.GrantConsumer{Namespace: "team-b"}, backendsv1alpha1.GrantConsumer{Namespace: "team-z"}),
			opts:   []Option{WithWatchNamespaces([]string{"team-a", "team-b"})},
			labels: labels,
			want:   []metav1.Condition{wantCond("Ready", metav1.ConditionFalse, backendsv1alpha1.NamespaceNotWatchedReason)},
			consumers: []backendsv1alpha1.GrantConsumerStatus{{Namespace: "team-b", Name: "web",
				Backend: backendsv1alpha1.BackendReference{Kind: hb, Name: "network"}, Outputs: []string{"vpc_id"}}},
		},
		"a selector while the labels cannot be read": {
			grant:  grantOf(backendsv1alpha1.GrantConsumer{NamespaceSelector: &metav1.LabelSelector{}}),
			labels: fixedLabels{unknown: errNotAllowed},
			want:   []metav1.Condition{wantCond("Ready", metav1.ConditionFalse, backendsv1alpha1.NamespaceNotWatchedReason)},
		},
		"a selector that does not parse stalls, and the named namespaces are still listed": {
			grant: grantOf(backendsv1alpha1.GrantConsumer{Namespace: "team-b"}, backendsv1alpha1.GrantConsumer{NamespaceSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Sometimes"}}}}),
			labels: labels,
			want: []metav1.Condition{wantCond("Stalled", metav1.ConditionTrue, backendsv1alpha1.InvalidSpecReason),
				wantCond("Ready", metav1.ConditionFalse, backendsv1alpha1.InvalidSpecReason)},
			consumers: []backendsv1alpha1.GrantConsumerStatus{{Namespace: "team-b", Name: "web",
				Backend: backendsv1alpha1.BackendReference{Kind: hb, Name: "network"}, Outputs: []string{"vpc_id"}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, patches := grantEnv(t, tc.grant, &web)
			r := newOutputGrantReconciler(c, c, &recordingRecorder{}, tc.opts...)
			r.labels = tc.labels
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tc.grant)}
			for range 2 {
				if _, err := r.Reconcile(t.Context(), req); err != nil {
					t.Fatal(err)
				}
			}
			if *patches != 1 {
				t.Errorf("%d status patches, want 1: a reconciliation that learns nothing new writes nothing", *patches)
			}
			got := &backendsv1alpha1.OutputGrant{}
			if err := c.Get(t.Context(), req.NamespacedName, got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Status.Conditions, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime", "Message", "ObservedGeneration")); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.consumers, got.Status.Consumers); diff != "" {
				t.Errorf("consumers (-want +got):\n%s", diff)
			}
			if got.Status.ObservedGeneration != 1 || got.Status.ConsumerCount != int32(len(tc.consumers)) {
				t.Errorf("observedGeneration %d, consumerCount %d; want 1 and %d", got.Status.ObservedGeneration, got.Status.ConsumerCount, len(tc.consumers))
			}
			if v := kstatusViolations(got.Status.Conditions, got.Generation, got.Status.ObservedGeneration); len(v) > 0 {
				t.Errorf("kstatus invariants: %v", v)
			}
		})
	}
}
