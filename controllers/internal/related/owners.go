package related

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HoldOwnedBy makes the watches hold a Secret or ConfigMap that an
// object of this API controls only while the manager's cache holds that
// object: owners makes an object of each kind that writes them, by kind.
// A manager that holds a shard of the objects (a label selector on its
// cache) then keeps only what its own objects write, not every shard's.
// It must be called before the watches start.
func (w *Watches) HoldOwnedBy(owners map[string]func() client.Object) { w.owners = owners }

// ownerHeld reports whether the cache holds owner, the controller of an
// object of namespace. An owner of a kind HoldOwnedBy did not name, or an
// error reading the cache, counts as held, so that nothing is dropped by
// mistake. An object whose owner arrives later (it moved to this shard)
// is held from its next event, or from when its owner's reconcile reads
// and remembers it.
func (w *Watches) ownerHeld(ctx context.Context, namespace string, owner *metav1.OwnerReference) bool {
	return ownerIn(ctx, w.cache, w.owners, namespace, owner)
}

// ownerIn is ownerHeld reading c.
func ownerIn(ctx context.Context, c client.Reader, owners map[string]func() client.Object, namespace string, owner *metav1.OwnerReference) bool {
	newObject, ok := owners[owner.Kind]
	if !ok {
		return true
	}
	// Only whether it exists is read: the cache's object needs no copy
	// (every Secret and ConfigMap the operator writes comes here).
	err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: owner.Name}, newObject(), client.UnsafeDisableDeepCopy)
	return err == nil || !apierrors.IsNotFound(err)
}
