package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// referencesIndex indexes backends by the Secrets and ConfigMaps they
// reference, as "Secret/<name>" and "ConfigMap/<name>", so that a change to
// one of them reconciles exactly the backends that read it.
const referencesIndex = ".spec.references"

func secretReference(name string) string    { return "Secret/" + name }
func configMapReference(name string) string { return "ConfigMap/" + name }

// enqueueReferrers returns a map function that enqueues every object of
// list's kind in the event object's namespace whose references index holds
// reference(name).
func enqueueReferrers(c client.Reader, newList func() client.ObjectList, reference func(string) string) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		list := newList()
		if err := c.List(ctx, list, client.InNamespace(obj.GetNamespace()),
			client.MatchingFields{referencesIndex: reference(obj.GetName())}); err != nil {
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
