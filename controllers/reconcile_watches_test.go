package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// TestReconcileWatchesFindReferrers checks, through the production field
// indexes on the fake client, which objects the watches reconcile when a
// Secret, a ConfigMap or a backend changes: those that reference, render
// or publish to it, and the RemoteStates reading a backend that does.
func TestReconcileWatchesFindReferrers(t *testing.T) {
	objects := []client.Object{
		newWebBackend(func(b *httpBackendBuilder) { b.caFromConfigMap("state-ca") }),
		stored(makeHttpBackend("other", harnessNamespace, harnessAddress).build()),
		newNetworkState(),
		stored(makeRemoteState("unrelated", harnessNamespace, httpBackendKind, "other")),
		stored(makeRemoteState("elsewhere", "team-b", httpBackendKind, webBackend.name)),
	}
	c := newReconcileEnv(t, objects, stateScript{}, nil).client
	httpBackends := func() client.ObjectList { return &backendsv1alpha1.HttpBackendList{} }
	secret := func(name string) client.Object {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: harnessNamespace, Name: name}}
	}
	requests := func(names ...string) []reconcile.Request {
		out := make([]reconcile.Request, 0, len(names))
		for _, n := range names {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: harnessNamespace, Name: n}})
		}
		return out
	}

	cases := map[string]struct {
		mapper handler.MapFunc
		event  client.Object
		want   []reconcile.Request
	}{
		"a referenced Secret reconciles its backend": {
			mapper: enqueueReferrers(c, httpBackends, secretReference),
			event:  secret("state-password"), want: requests("web"),
		},
		"a referenced ConfigMap reconciles its backend": {
			mapper: enqueueReferrers(c, httpBackends, configMapReference),
			event:  secret("state-ca"), want: requests("web"),
		},
		"a rendered Secret reconciles its backend": {
			mapper: enqueueReferrers(c, httpBackends, secretReference),
			event:  secret(webSecret), want: requests("web"),
		},
		"a Secret of the same name as a ConfigMap reconciles nothing": {
			mapper: enqueueReferrers(c, httpBackends, secretReference),
			event:  secret("state-ca"),
		},
		"a backend reconciles the RemoteStates of its namespace reading it": {
			mapper: readersOfBackend(c, httpBackendKind),
			event:  newWebBackend(), want: requests("network"),
		},
		"a backend's referenced Secret reconciles the RemoteStates reading it": {
			mapper: readersOfReferenced(c, secretReference),
			event:  secret("state-password"), want: requests("network"),
		},
		"a published Secret reconciles its RemoteState": {
			mapper: readersOfReferenced(c, secretReference),
			event:  secret(networkOutputs), want: requests("network"),
		},
		"an unreferenced ConfigMap reconciles nothing": {
			mapper: readersOfReferenced(c, configMapReference),
			event:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: harnessNamespace, Name: "unrelated"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.mapper(t.Context(), tc.event)
			less := func(a, b reconcile.Request) bool { return a.String() < b.String() }
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(less), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}
