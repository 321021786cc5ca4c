package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// TestReconcileWatchesFindReferrers checks, through the production field
// indexes on the fake client, which objects the watches reconcile when a
// Secret, a ConfigMap or a backend changes: those that reference, render
// or publish to it, and the RemoteStates reading a backend that does.
func TestReconcileWatchesFindReferrers(t *testing.T) {
	objects := []client.Object{
		newWebBackend(func(b *builders.HttpBackendWrapper) { b.CAFromConfigMap("state-ca") }),
		stored(builders.MakeHttpBackend("other", harnessNamespace, harnessAddress).Obj()),
		stored(builders.MakeHttpBackend("custom", harnessNamespace, harnessAddress).ConfigMapName("custom-files").Obj()),
		stored(builders.MakeHttpBackend("own", harnessNamespace, harnessAddress).BasicAuth("user", "own-password", "password").
			CAFromConfigMap("own-ca").ConfigMapName("own-files").Obj()),
		stored(builders.MakeHttpBackend("own-password", harnessNamespace, harnessAddress).Obj()),
		newNetworkState(),
		stored(builders.MakeRemoteState("unrelated", harnessNamespace, backendsv1alpha1.HttpBackendKind, "other").Obj()),
		stored(builders.MakeRemoteState("elsewhere", "team-b", backendsv1alpha1.HttpBackendKind, webBackend.name).Obj()),
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
			mapper: enqueueReferrers(c, httpBackends, related.SecretReference),
			event:  secret("state-password"), want: requests("web"),
		},
		"a referenced ConfigMap reconciles its backend": {
			mapper: enqueueReferrers(c, httpBackends, related.ConfigMapReference),
			event:  secret("state-ca"), want: requests("web"),
		},
		"a rendered Secret reconciles its backend": {
			mapper: writersAndReferrers(c, httpKind{}, related.SecretReference),
			event:  secret(webSecret), want: requests("web"),
		},
		"a rendered ConfigMap reconciles its backend": {
			mapper: writersAndReferrers(c, httpKind{}, related.ConfigMapReference),
			event:  secret(webConfigMap), want: requests("web"),
		},
		"a Secret named as a missing backend's would be reconciles nothing": {
			mapper: writersAndReferrers(c, httpKind{}, related.SecretReference),
			event:  secret("gone-backend-credentials"),
		},
		"a Secret named as another kind's backend's would be reconciles nothing": {
			mapper: writersAndReferrers(c, cosKind{}, related.SecretReference),
			event:  secret(webSecret),
		},
		"a ConfigMap under a configMapName reconciles its backend": {
			mapper: writersAndReferrers(c, httpKind{}, related.ConfigMapReference),
			event:  secret("custom-files"), want: requests("custom"),
		},
		"a Secret named after its backend reconciles it": {
			mapper: writersAndReferrers(c, httpKind{}, related.SecretReference),
			event:  secret("own-password"), want: requests("own"),
		},
		"a ConfigMap named after its backend reconciles it": {
			mapper: writersAndReferrers(c, httpKind{}, related.ConfigMapReference),
			event:  secret("own-ca"), want: requests("own"),
		},
		"a configMapName named after its backend reconciles it": {
			mapper: writersAndReferrers(c, httpKind{}, related.ConfigMapReference),
			event:  secret("own-files"), want: requests("own"),
		},
		"a Secret named after a backend that does not reference it reconciles nothing": {
			mapper: writersAndReferrers(c, httpKind{}, related.SecretReference),
			event:  secret("own-other"),
		},
		"a ConfigMap named as a Secret a backend references reconciles nothing": {
			mapper: writersAndReferrers(c, httpKind{}, related.ConfigMapReference),
			event:  secret("own-password"),
		},
		"a Secret named after a backend of another kind reconciles nothing": {
			mapper: writersAndReferrers(c, cosKind{}, related.SecretReference),
			event:  secret("own-password"),
		},
		"a Secret of the same name as a ConfigMap reconciles nothing": {
			mapper: enqueueReferrers(c, httpBackends, related.SecretReference),
			event:  secret("state-ca"),
		},
		"a backend reconciles the RemoteStates of its namespace reading it": {
			mapper: readersOfBackend(c, backendsv1alpha1.HttpBackendKind),
			event:  newWebBackend(), want: requests("network"),
		},
		"a backend's referenced Secret reconciles the RemoteStates reading it": {
			mapper: readersOfReferenced(c, related.SecretReference),
			event:  secret("state-password"), want: requests("network"),
		},
		"a published Secret reconciles its RemoteState": {
			mapper: readersOfReferenced(c, related.SecretReference),
			event:  secret(networkOutputs), want: requests("network"),
		},
		"an unreferenced ConfigMap reconciles nothing": {
			mapper: readersOfReferenced(c, related.ConfigMapReference),
			event:  builders.MakeConfigMap("unrelated", harnessNamespace).Obj(),
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

// TestBackendReferencesIndex checks the related.ReferencesIndex values of
// a backend: what it references and renders under names of its spec's
// choosing, but the names taken after its own (see indexedReferences), and
// that ownReferrersOf finds those.
func TestBackendReferencesIndex(t *testing.T) {
	own := stored(builders.MakeHttpBackend("web", harnessNamespace, harnessAddress).BasicAuth("user", "web-password", "password").
		CAFromConfigMap("shared-ca").ClientCertificate("web-tls").ConfigMapName("files").Obj())
	want := []string{related.ConfigMapReference("files"), related.ConfigMapReference("shared-ca")}
	if diff := cmp.Diff(want, backendReferences(httpKind{})(own), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("index values (-want +got):\n%s", diff)
	}

	c := newReconcileEnv(t, []client.Object{own}, stateScript{}, nil).client
	named := ownReferrersOf(c, backendKinds)
	for _, tc := range []struct {
		name      string
		reference func(string) string
		want      bool
	}{
		{"web-password", related.SecretReference, true},
		{"web-tls", related.SecretReference, true},
		{"web-tls", related.ConfigMapReference, false},
		{"web-other", related.SecretReference, false},
		{"shared-ca", related.ConfigMapReference, false}, // indexed, not named after the backend
		{"other-password", related.SecretReference, false},
	} {
		if got := named(t.Context(), harnessNamespace, tc.name, tc.reference); got != tc.want {
			t.Errorf("%s named after a backend that references it: %v, want %v", tc.reference(tc.name), got, tc.want)
		}
	}
}

// TestReconcileWatchesSkipOwnCreation checks that the creation of an
// object an object writes does not reconcile its writer again (the
// reconcile that created it knows it), while its changes and deletion do,
// and its creation still reconciles any other object that references it.
func TestReconcileWatchesSkipOwnCreation(t *testing.T) {
	objects := []client.Object{
		newWebBackend(),
		stored(builders.MakeHttpBackend("reader", harnessNamespace, harnessAddress).BasicAuth("runner", webSecret, "password").Obj()),
		newNetworkState(),
	}
	c := newReconcileEnv(t, objects, stateScript{}, nil).client
	written := func(name, kind, owner string) client.Object {
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: harnessNamespace, Name: name}}
		if owner != "" {
			obj.OwnerReferences = []metav1.OwnerReference{{
				APIVersion: backendsv1alpha1.GroupVersion.String(), Kind: kind, Name: owner, Controller: new(true),
			}}
		}
		return obj
	}
	backends := referrersOf(backendsv1alpha1.HttpBackendKind, writersAndReferrers(c, httpKind{}, related.SecretReference))
	remoteStates := referrersOf(backendsv1alpha1.RemoteStateKind, readersOfReferenced(c, related.SecretReference))

	type send func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request])
	create := func(obj client.Object) send {
		return func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(t.Context(), ctrlevent.CreateEvent{Object: obj}, q)
		}
	}
	update := func(obj client.Object) send {
		return func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(t.Context(), ctrlevent.UpdateEvent{ObjectOld: obj, ObjectNew: obj}, q)
		}
	}
	deleted := func(obj client.Object) send {
		return func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(t.Context(), ctrlevent.DeleteEvent{Object: obj}, q)
		}
	}
	cases := map[string]struct {
		handler handler.EventHandler
		event   send
		want    []string
	}{
		"creating its rendered Secret does not reconcile the backend, but reconciles one reading it": {
			handler: backends, event: create(written(webSecret, backendsv1alpha1.HttpBackendKind, webBackend.name)), want: []string{"reader"},
		},
		"changing its rendered Secret reconciles the backend": {
			handler: backends, event: update(written(webSecret, backendsv1alpha1.HttpBackendKind, webBackend.name)), want: []string{"reader", "web"},
		},
		"deleting its rendered Secret reconciles the backend": {
			handler: backends, event: deleted(written(webSecret, backendsv1alpha1.HttpBackendKind, webBackend.name)), want: []string{"reader", "web"},
		},
		"a foreign object created under a rendered name reconciles the backend": {
			handler: backends, event: create(written(webSecret, "", "")), want: []string{"reader", "web"},
		},
		"an object of another kind of the same name is not its writer": {
			handler: backends, event: create(written(webSecret, backendsv1alpha1.RemoteStateKind, webBackend.name)), want: []string{"reader", "web"},
		},
		"creating its published Secret does not reconcile the RemoteState": {
			handler: remoteStates, event: create(written(networkOutputs, backendsv1alpha1.RemoteStateKind, "network")),
		},
		"changing its published Secret reconciles the RemoteState": {
			handler: remoteStates, event: update(written(networkOutputs, backendsv1alpha1.RemoteStateKind, "network")), want: []string{"network"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := priorityqueue.New[reconcile.Request]("test")
			defer q.ShutDown()
			tc.event(tc.handler, q)
			var got []string
			for q.Len() > 0 {
				req, priority, _ := q.GetWithPriority()
				got = append(got, req.Name)
				q.Done(req)
				// A change, queued ahead of the resyncs and the periodic
				// probes.
				if priority != 0 {
					t.Errorf("%s queued at priority %d, want 0", req.Name, priority)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b }), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("reconciled (-want +got):\n%s", diff)
			}
		})
	}
}
