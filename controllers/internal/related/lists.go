package related

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/contenthash"
)

// ForEachObject calls fn for every item of a typed list.
func ForEachObject(list client.ObjectList, fn func(client.Object)) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	for _, item := range items {
		if o, ok := item.(client.Object); ok {
			fn(o)
		}
	}
	return nil
}

// countItems is the number of items of a typed list.
func countItems(list client.ObjectList) (int, error) {
	n := 0
	err := ForEachObject(list, func(client.Object) { n++ })
	return n, err
}

// ControllerOfThisAPI is obj's controller reference when the controller
// is an object of this API, nil otherwise.
func ControllerOfThisAPI(obj metav1.Object) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != backendsv1alpha1.GroupVersion.Group {
		return nil
	}
	return ref
}

// KeptAnnotations is what cacheTransform and the related watches keep of
// the annotations of a Secret or ConfigMap: the content hash and the
// stored size of an object the operator wrote (see owned.Writer), which
// hold no secret, and nothing else.
func KeptAnnotations(in map[string]string) map[string]string {
	var out map[string]string
	for _, key := range []string{contenthash.Annotation, contenthash.StoredBytesAnnotation} {
		if v, ok := in[key]; ok {
			if out == nil {
				out = make(map[string]string, 2)
			}
			out[key] = v
		}
	}
	return out
}
