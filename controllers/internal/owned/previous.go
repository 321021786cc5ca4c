package owned

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/render"
)

// DeletePrevious deletes the ConfigMap and the Secret the owner wrote
// under the names previous records (its status.rendered) when it now
// writes configMapName and secretName instead: objects left behind when
// the user renames them. Objects the owner does not control are left
// alone. The deletions give their bytes back to the API storage budget
// when the related watches report them (see Ledger.Observe), as garbage
// collection's do.
func (w Writer) DeletePrevious(ctx context.Context, owner render.Owner, previous *backendsv1alpha1.RenderedObjects, configMapName, secretName string) error {
	if previous == nil {
		return nil
	}
	for _, stale := range []struct{ kind, name, now string }{
		{"ConfigMap", previous.ConfigMapName, configMapName},
		{"Secret", previous.SecretName, secretName},
	} {
		if stale.name == "" || stale.name == stale.now {
			continue
		}
		key := types.NamespacedName{Namespace: owner.Namespace, Name: stale.name}
		if err := w.deleteIfOwned(ctx, stale.kind, key, owner.UID); err != nil {
			return fmt.Errorf("deleting the previous %s %s: %w", stale.kind, key, err)
		}
		writer := WriterKey{Kind: owner.Kind, NamespacedName: types.NamespacedName{Namespace: owner.Namespace, Name: owner.Name}}
		w.Versions.set(writer, writtenKey{kind: stale.kind, name: stale.name}, "")
	}
	return nil
}

// deleteIfOwned deletes the ConfigMap or Secret key when owner controls
// it. It reads only the object's metadata, from the cache; the deletion is
// conditional on the UID read.
func (w Writer) deleteIfOwned(ctx context.Context, kind string, key types.NamespacedName, owner types.UID) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	if err := w.Metadata.Get(ctx, key, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if ref := metav1.GetControllerOf(obj); ref == nil || ref.UID != owner {
		return nil
	}
	if err := w.Client.Delete(ctx, obj, client.Preconditions{UID: new(obj.GetUID())}); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}
