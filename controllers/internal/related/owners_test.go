package related

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// TestOwnerIn checks which controllers of this API keep the Secret or
// ConfigMap they control held: those the cache holds, and any it cannot
// tell about.
func TestOwnerIn(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := backendsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	owners := map[string]func() client.Object{
		backendsv1alpha1.HttpBackendKind: func() client.Object { return &backendsv1alpha1.HttpBackend{} },
	}
	held := &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}
	ref := func(kind, name string) *metav1.OwnerReference {
		return &metav1.OwnerReference{APIVersion: backendsv1alpha1.GroupVersion.String(), Kind: kind, Name: name}
	}
	failing := interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return errors.New("cache not synced")
	}}
	cases := map[string]struct {
		namespace string
		owner     *metav1.OwnerReference
		broken    bool
		want      bool
	}{
		"its owner is in the cache":                 {namespace: "team-a", owner: ref(backendsv1alpha1.HttpBackendKind, "web"), want: true},
		"its owner is another shard's, or gone":     {namespace: "team-a", owner: ref(backendsv1alpha1.HttpBackendKind, "db"), want: false},
		"an owner of the same name elsewhere":       {namespace: "team-b", owner: ref(backendsv1alpha1.HttpBackendKind, "web"), want: false},
		"an owner of a kind with no object to read": {namespace: "team-a", owner: ref(backendsv1alpha1.StateLockKind, "db"), want: true},
		"the cache cannot say":                      {namespace: "team-a", owner: ref(backendsv1alpha1.HttpBackendKind, "db"), broken: true, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			builder := fake.NewClientBuilder().WithScheme(scheme).WithObjects(held)
			if tc.broken {
				builder = builder.WithInterceptorFuncs(failing)
			}
			if got := ownerIn(t.Context(), builder.Build(), owners, tc.namespace, tc.owner); got != tc.want {
				t.Errorf("ownerIn() = %v, want %v", got, tc.want)
			}
		})
	}
}
