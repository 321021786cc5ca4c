package related

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/contenthash"
)

// TestRelatedObjects drives the store of a related watch as a reflector
// does, and checks what it holds (only objects related when they change,
// or remembered, trimmed) and which events reach the handlers (all of
// them, but none for the first list, and after a new list only what
// changed meanwhile).
func TestRelatedObjects(t *testing.T) {
	named := map[string]bool{"referenced": true}
	secret := func(name, version string, edit ...func(*metav1.PartialObjectMetadata)) *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: version}}
		for _, e := range edit {
			e(m)
		}
		return m
	}
	owned := func(m *metav1.PartialObjectMetadata) {
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: backendsv1alpha1.GroupVersion.String(), Kind: "HttpBackend", Name: "web", Controller: new(true)}}
	}
	foreignOwner := func(m *metav1.PartialObjectMetadata) {
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Controller: new(true)}}
	}
	annotated := func(m *metav1.PartialObjectMetadata) {
		m.Annotations = map[string]string{contenthash.Annotation: "sha256:1", contenthash.StoredBytesAnnotation: "12",
			"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"x"}}`}
	}

	type step func(s *relatedStore) error
	add := func(m *metav1.PartialObjectMetadata) step { return func(s *relatedStore) error { return s.Add(m) } }
	update := func(m *metav1.PartialObjectMetadata) step { return func(s *relatedStore) error { return s.Update(m) } }
	del := func(m any) step { return func(s *relatedStore) error { return s.Delete(m) } }
	replace := func(ms ...*metav1.PartialObjectMetadata) step {
		return func(s *relatedStore) error {
			list := make([]any, 0, len(ms))
			for _, m := range ms {
				list = append(list, m)
			}
			return s.Replace(list, "")
		}
	}
	remember := func(m *metav1.PartialObjectMetadata) step {
		return func(s *relatedStore) error { s.watch.remember(m); return nil }
	}

	cases := map[string]struct {
		steps      []step
		wantHeld   map[string]string // name to version
		wantEvents []string
		// wantObserved is what the observers see: "seen" or "gone", the
		// name and the version.
		wantObserved []string
	}{
		"the first list holds only related objects and reports nothing, but observers see it all": {
			steps:        []step{replace(secret("referenced", "1"), secret("unrelated", "1"), secret("rendered", "1", owned), secret("theirs", "1", foreignOwner))},
			wantHeld:     map[string]string{"referenced": "1", "rendered": "1"},
			wantObserved: []string{"seen referenced 1", "seen unrelated 1", "seen rendered 1", "seen theirs 1"},
		},
		"every event is reported, related or not": {
			steps:        []step{replace(), add(secret("unrelated", "1")), update(secret("unrelated", "2")), del(secret("unrelated", "2"))},
			wantEvents:   []string{"created unrelated", "updated unrelated", "deleted unrelated"},
			wantObserved: []string{"seen unrelated 1", "seen unrelated 2", "gone unrelated 2"},
		},
		"an object held stays held while it changes, until deleted": {
			steps:        []step{replace(), add(secret("rendered", "1", owned)), update(secret("rendered", "2", owned))},
			wantHeld:     map[string]string{"rendered": "2"},
			wantEvents:   []string{"created rendered", "updated rendered"},
			wantObserved: []string{"seen rendered 1", "seen rendered 2"},
		},
		"a deletion whose final state is unknown is reported": {
			steps: []step{replace(secret("referenced", "1")),
				del(toolscache.DeletedFinalStateUnknown{Key: "ns/referenced", Obj: secret("referenced", "1")})},
			wantEvents:   []string{"deleted referenced"},
			wantObserved: []string{"seen referenced 1", "gone referenced 1"},
		},
		"a remembered object is held, and the watch's newer version wins": {
			steps:        []step{replace(), remember(secret("unrelated", "1")), update(secret("unrelated", "2")), remember(secret("unrelated", "1"))},
			wantHeld:     map[string]string{"unrelated": "2"},
			wantEvents:   []string{"updated unrelated"},
			wantObserved: []string{"seen unrelated 2"},
		},
		"a new list reports what changed meanwhile": {
			steps: []step{
				replace(secret("referenced", "1"), secret("rendered", "1", owned)),
				replace(secret("referenced", "2"), secret("unrelated", "1")),
			},
			wantHeld:     map[string]string{"referenced": "2"},
			wantEvents:   []string{"updated referenced", "created unrelated", "deleted rendered"},
			wantObserved: []string{"seen referenced 1", "seen rendered 1", "seen referenced 2", "seen unrelated 1", "gone rendered 1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newRelatedObjects("Secret", nil, func(_ context.Context, m *metav1.PartialObjectMetadata) bool {
				ref := metav1.GetControllerOf(m)
				return named[m.Name] || (ref != nil && ref.Kind == "HttpBackend")
			})
			var events, observed []string
			w.addHandler(func(_ context.Context, e relatedEvent, m *metav1.PartialObjectMetadata) {
				events = append(events, [...]string{"created", "updated", "deleted"}[e]+" "+m.Name)
			})
			w.addObserver(func(kind string, m *metav1.PartialObjectMetadata, deleted bool) {
				if kind != "Secret" {
					t.Errorf("observed a %s, want a Secret", kind)
				}
				observed = append(observed, map[bool]string{false: "seen", true: "gone"}[deleted]+" "+m.Name+" "+m.ResourceVersion)
			})
			s := &relatedStore{watch: w, ctx: t.Context(), namespace: metav1.NamespaceAll}
			for i, step := range tc.steps {
				if err := step(s); err != nil {
					t.Fatalf("step %d: %v", i+1, err)
				}
			}
			held := map[string]string{}
			for _, m := range w.heldIn(metav1.NamespaceAll) {
				held[m.Name] = m.ResourceVersion
			}
			if diff := cmp.Diff(tc.wantHeld, held, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("held (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, events, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantObserved, observed, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("observed (-want +got):\n%s", diff)
			}
			select {
			case <-w.synced:
			default:
				t.Error("not synced after the first list")
			}
		})
	}

	t.Run("what is held is trimmed", func(t *testing.T) {
		w := newRelatedObjects("Secret", nil, func(context.Context, *metav1.PartialObjectMetadata) bool { return true })
		s := &relatedStore{watch: w, ctx: t.Context()}
		in := secret("rendered", "7", owned, annotated, func(m *metav1.PartialObjectMetadata) {
			m.UID = "u-1"
			m.Labels = map[string]string{"a": "b"}
			m.Finalizers = []string{"x"}
			m.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
			m.Generation = 3
		})
		if err := s.Add(in); err != nil {
			t.Fatal(err)
		}
		got, ok := w.get(types.NamespacedName{Namespace: "ns", Name: "rendered"})
		if !ok {
			t.Fatal("not held")
		}
		want := &metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rendered", UID: "u-1", ResourceVersion: "7",
				Labels: map[string]string{"a": "b"}, OwnerReferences: in.OwnerReferences,
				Annotations: map[string]string{contenthash.Annotation: "sha256:1", contenthash.StoredBytesAnnotation: "12"}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("held (-want +got):\n%s", diff)
		}
	})
}

// TestRelatedStoreTransformer checks that the reflector's transformer
// trims what it decodes, as the store would.
func TestRelatedStoreTransformer(t *testing.T) {
	s := &relatedStore{watch: newRelatedObjects("ConfigMap", nil, nil)}
	in := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "cm", ResourceVersion: "3",
		Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
	}}
	got, err := s.Transformer()(in)
	if err != nil {
		t.Fatal(err)
	}
	want := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: "3"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transformed (-want +got):\n%s", diff)
	}
}

// TestOwnReference checks which names are named after an object, and
// which objects a name may be named after.
func TestOwnReference(t *testing.T) {
	cases := map[string]struct {
		name   string
		owners []string
	}{
		"a backend's password":     {name: "web-password", owners: []string{"web"}},
		"a dashed backend's":       {name: "hb-00001-password", owners: []string{"hb", "hb-00001"}},
		"no dash":                  {name: "password"},
		"a leading dash":           {name: "-password"},
		"a trailing dash":          {name: "web-"},
		"two dashes side by side":  {name: "web--x", owners: []string{"web", "web-"}},
		"a single letter and dash": {name: "a-b", owners: []string{"a"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.owners, OwnerNames(tc.name), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("OwnerNames(%q) (-want +got):\n%s", tc.name, diff)
			}
			for _, owner := range tc.owners {
				if !OwnReference(owner, tc.name) {
					t.Errorf("OwnReference(%q, %q) = false, want true", owner, tc.name)
				}
			}
		})
	}
	for _, tc := range []struct{ owner, name string }{
		{"web", "web"}, {"web", "web-"}, {"web", "webx-password"}, {"web", "other-web-password"}, {"web-password", "web"},
	} {
		if OwnReference(tc.owner, tc.name) {
			t.Errorf("OwnReference(%q, %q) = true, want false", tc.owner, tc.name)
		}
	}
}
