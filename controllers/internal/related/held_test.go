package related

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/contenthash"
	"github.com/infrastate/backend-operator/internal/render"
)

// TestHeldObject checks that what relatedObjects keeps of an object gives
// back its metadata as trimMetadata leaves it, but for owners other than
// the controller.
func TestHeldObject(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "web-backend"}
	base := metav1.ObjectMeta{Namespace: "ns", Name: "web-backend", UID: "u-1", ResourceVersion: "42"}
	controller := func(block *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: backendsv1alpha1.GroupVersion.String(), Kind: backendsv1alpha1.HttpBackendKind,
			Name: "web", UID: "u-2", Controller: new(true), BlockOwnerDeletion: block}
	}
	cases := map[string]struct {
		meta metav1.ObjectMeta
		want metav1.ObjectMeta
	}{
		"no labels, owners or annotations": {meta: base, want: base},
		"a rendered object": {
			meta: func() metav1.ObjectMeta {
				m := base
				m.Labels = render.Labels("web")
				m.OwnerReferences = []metav1.OwnerReference{controller(new(true))}
				m.Annotations = map[string]string{contenthash.Annotation: "sha256:1", contenthash.StoredBytesAnnotation: "12", "other": "x"}
				return m
			}(),
			want: func() metav1.ObjectMeta {
				m := base
				m.Labels = render.Labels("web")
				m.OwnerReferences = []metav1.OwnerReference{controller(new(true))}
				m.Annotations = map[string]string{contenthash.Annotation: "sha256:1", contenthash.StoredBytesAnnotation: "12"}
				return m
			}(),
		},
		"blockOwnerDeletion false": {
			meta: func() metav1.ObjectMeta {
				m := base
				m.OwnerReferences = []metav1.OwnerReference{controller(new(false))}
				return m
			}(),
			want: func() metav1.ObjectMeta {
				m := base
				m.OwnerReferences = []metav1.OwnerReference{controller(new(false))}
				return m
			}(),
		},
		"blockOwnerDeletion unset": {
			meta: func() metav1.ObjectMeta {
				m := base
				m.OwnerReferences = []metav1.OwnerReference{controller(nil)}
				return m
			}(),
			want: func() metav1.ObjectMeta {
				m := base
				m.OwnerReferences = []metav1.OwnerReference{controller(nil)}
				return m
			}(),
		},
		"owners that do not control it": {
			meta: func() metav1.ObjectMeta {
				m := base
				m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u-3"}, controller(nil)}
				return m
			}(),
			want: func() metav1.ObjectMeta {
				m := base
				m.OwnerReferences = []metav1.OwnerReference{controller(nil)}
				return m
			}(),
		},
		"a user's labels": {
			meta: func() metav1.ObjectMeta {
				m := base
				m.Labels = map[string]string{"b": "2", "a": "1", backendsv1alpha1.AllowReferenceLabel: "true", "empty": ""}
				return m
			}(),
			want: func() metav1.ObjectMeta {
				m := base
				m.Labels = map[string]string{"b": "2", "a": "1", backendsv1alpha1.AllowReferenceLabel: "true", "empty": ""}
				return m
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := holdObject(&metav1.PartialObjectMetadata{ObjectMeta: tc.meta}).metadata("Secret", key)
			want := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: tc.want}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHeldObjectOwnCopies checks that a held object keeps the operator's
// own copies of the label keys and values, API version and kind it
// writes, not those decoded for the object, and that the metadata it
// gives back can be changed without changing what it holds.
func TestHeldObjectOwnCopies(t *testing.T) {
	decoded := strings.Clone
	meta := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name:   "web-backend",
		Labels: map[string]string{decoded(render.ManagedByLabel): decoded(render.ManagedByValue), decoded(render.BackendLabel): decoded("web")},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: decoded(backendsv1alpha1.GroupVersion.String()), Kind: decoded(backendsv1alpha1.HttpBackendKind),
			Name: "web", Controller: new(true)}},
	}}
	held := holdObject(meta)
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	own := []string{render.ManagedByLabel, render.ManagedByValue, render.BackendLabel, held.controller.apiVersion, held.controller.kind}
	for _, s := range own {
		if !same(s, knownString(strings.Clone(s))) {
			t.Errorf("%q is held as decoded, not as the operator's own copy", s)
		}
	}
	for _, s := range []string{render.ManagedByLabel, render.ManagedByValue, render.BackendLabel} {
		if i := indexOf(held.labels, s); i < 0 || !same(held.labels[i], knownString(s)) {
			t.Errorf("the label string %q is held as decoded", s)
		}
	}

	first := held.metadata("Secret", types.NamespacedName{Name: "web-backend"})
	first.Labels["added"] = "x"
	*first.OwnerReferences[0].Controller = false
	second := held.metadata("Secret", types.NamespacedName{Name: "web-backend"})
	if diff := cmp.Diff(render.Labels("web"), second.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if c := second.OwnerReferences[0].Controller; c == nil || !*c {
		t.Error("the controller reference no longer says it controls the object")
	}
}

func indexOf(pairs []string, s string) int {
	for i, p := range pairs {
		if p == s {
			return i
		}
	}
	return -1
}
