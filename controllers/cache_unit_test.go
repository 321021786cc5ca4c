package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/contenthash"
)

// TestCacheTransform checks what the manager's cache keeps of an object:
// no managed fields and no kubectl last-applied copy, but its other
// annotations; of metadata, only the content hash and stored size
// annotations.
func TestCacheTransform(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	cases := map[string]struct {
		in, want any
	}{
		"a backend applied with kubectl": {
			in: &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Name: "app", ManagedFields: managed, Annotations: map[string]string{
				lastAppliedAnnotation: `{"spec":{"address":"https://state.example.com"}}`, "team": "a",
			}}},
			want: &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Name: "app", Annotations: map[string]string{"team": "a"}}},
		},
		"a backend without annotations": {
			in:   &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
			want: &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		},
		"metadata of a Secret": {
			in: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: managed, Annotations: map[string]string{
				lastAppliedAnnotation: `{"data":{"password":"x"}}`, contenthash.Annotation: "sha256:1", contenthash.StoredBytesAnnotation: "9", "team": "a",
			}}},
			want: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "s", Annotations: map[string]string{
				contenthash.Annotation: "sha256:1", contenthash.StoredBytesAnnotation: "9",
			}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := cacheTransform()(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
		})
	}
}
