package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/render"
)

// referencesIndex indexes objects by the Secrets and ConfigMaps they
// reference or write, as "Secret/<name>" and "ConfigMap/<name>", so that a
// change to one of them reconciles exactly the objects that read it, and
// the deletion of a foreign object that took a name an object writes
// (NameConflict) lets that object write it at once.
const referencesIndex = ".spec.references"

func secretReference(name string) string    { return "Secret/" + name }
func configMapReference(name string) string { return "ConfigMap/" + name }

// renderedReferences are the references of the ConfigMap and the Secret a
// backend named name renders, configMapName being its spec.configMapName.
func renderedReferences(name, configMapName string) []string {
	if configMapName == "" {
		configMapName = render.DefaultConfigMapName(name)
	}
	return []string{configMapReference(configMapName), secretReference(render.CredentialsSecretName(name))}
}

// remoteStateReferences are the references of the ConfigMap and the Secret
// a RemoteState publishes to, for referencesIndex.
func remoteStateReferences(obj client.Object) []string {
	rs, ok := obj.(*backendsv1alpha1.RemoteState)
	if !ok {
		return nil
	}
	cm, secret := remoteStateTargets(rs)
	return []string{configMapReference(cm), secretReference(secret)}
}

// enqueueReferrers returns a map function that enqueues every object of
// list's kind in the event object's namespace whose references index holds
// reference(name).
func enqueueReferrers(c client.Reader, newList func() client.ObjectList, reference func(string) string) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		list := newList()
		// Only the names are read: the cache's objects need no copy.
		if err := c.List(ctx, list, client.InNamespace(obj.GetNamespace()),
			client.MatchingFields{referencesIndex: reference(obj.GetName())}, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		var requests []reconcile.Request
		_ = forEachObject(list, func(o client.Object) {
			requests = append(requests, reconcile.Request{NamespacedName: types.NamespacedName{
				Namespace: o.GetNamespace(), Name: o.GetName(),
			}})
		})
		return requests
	}
}

// forEachObject calls fn for every item of a typed list.
func forEachObject(list client.ObjectList, fn func(client.Object)) error {
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
	err := forEachObject(list, func(client.Object) { n++ })
	return n, err
}
