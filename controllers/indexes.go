package controllers

import (
	"context"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/render"
)

// renderedReferences are the references of the objects a backend named
// name renders under names of the spec's choosing: its configMapName, when
// it sets one other than the default. The default names (the ConfigMap's
// and the credentials Secret's, which has no other) are derived from the
// backend's name, and related.WriterOf finds the backend from them: an index entry
// for each of them would cost every backend memory twice over (the cache
// indexes a value per namespace and cluster-wide).
func renderedReferences(name, configMapName string) []string {
	if configMapName == "" || configMapName == render.DefaultConfigMapName(name) {
		return nil
	}
	return []string{related.ConfigMapReference(configMapName)}
}

// enqueueWriters returns a map function that enqueues the backend of kind
// that renders the event object (a Secret or ConfigMap, reference naming
// its kind) under a default name, when the cache holds it.
func enqueueWriters(c client.Reader, kind backendKind, reference func(string) string) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		name := related.WriterOf(reference, obj.GetName())
		if name == "" {
			return nil
		}
		key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}
		// Only whether it exists is read.
		if _, err := cachedBackend(ctx, c, kind, key); err != nil {
			return nil
		}
		return []reconcile.Request{{NamespacedName: key}}
	}
}

// writersAndReferrers enqueues, for kind, the backends that name the event
// object in related.ReferencesIndex, those that reference it under their
// own name (see ownReferrers), and the one that renders it under a
// default name.
func writersAndReferrers(c client.Reader, kind backendKind, reference func(string) string) func(context.Context, client.Object) []reconcile.Request {
	referrers, writers := enqueueReferrers(c, kind.newList, reference), enqueueWriters(c, kind, reference)
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		requests := referrers(ctx, obj)
		owners, _ := ownReferrers(ctx, c, kind, obj.GetNamespace(), obj.GetName(), reference)
		for _, w := range append(owners, writers(ctx, obj)...) {
			if !slices.Contains(requests, w) {
				requests = append(requests, w)
			}
		}
		return requests
	}
}

// allReferences are the Secrets and ConfigMaps a backend of kind
// references or renders under names of the spec's choosing, as
// related.ReferencesIndex values; backendReferences indexes those not
// named after the backend.
func allReferences(kind backendKind, backend backendObject) []string {
	return append(renderedReferences(backend.GetName(), kind.configMapName(backend)), kind.references(backend)...)
}

// indexedReferences are the related.ReferencesIndex values of a backend
// called name, whose references are all: those named after the backend
// (see related.OwnReference) are left out, and found by ownReferrers.
func indexedReferences(name string, all []string) []string {
	return slices.DeleteFunc(all, func(ref string) bool {
		_, refName, _ := strings.Cut(ref, "/")
		return related.OwnReference(name, refName)
	})
}

// ownReferrers returns a request for each backend of kind in namespace
// that the Secret or ConfigMap name (reference making its
// related.ReferencesIndex value) is named after and that references it,
// which its index values leave out (see indexedReferences). It reads the
// cache once per backend name may be named after (see
// related.OwnerNames), a couple of times. failed is true when a read
// failed otherwise than for a missing backend.
func ownReferrers(ctx context.Context, c client.Reader, kind backendKind, namespace, name string, reference func(string) string) (requests []reconcile.Request, failed bool) {
	want := reference(name)
	for _, owner := range related.OwnerNames(name) {
		key := types.NamespacedName{Namespace: namespace, Name: owner}
		obj, err := cachedBackend(ctx, c, kind, key)
		if err != nil {
			failed = failed || !apierrors.IsNotFound(err)
			continue
		}
		if slices.Contains(allReferences(kind, obj), want) {
			requests = append(requests, reconcile.Request{NamespacedName: key})
		}
	}
	return requests, failed
}

// cachedBackend returns the cache's backend of kind under key, to be read
// and never changed: the store's own object when c is a storeReader (which
// formats no error for a miss, the common case), else one read without a
// copy. Every watch event of a Secret or ConfigMap comes here, for each
// kind and each controller that watches them, a couple of times.
func cachedBackend(ctx context.Context, c client.Reader, kind backendKind, key types.NamespacedName) (backendObject, error) {
	obj := kind.newObject()
	if sr, ok := c.(*storeReader); ok {
		if cached, ok := sr.cached(ctx, obj, key); ok {
			if b, ok := cached.(backendObject); ok {
				return b, nil
			}
			return nil, errNotCached
		}
	}
	if err := c.Get(ctx, key, obj, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return obj, nil
}

// errNotCached is cachedBackend's answer for a backend the cache's store
// does not hold: a NotFound error made once.
var errNotCached = apierrors.NewNotFound(schema.GroupResource{Group: backendsv1alpha1.GroupVersion.Group}, "")

// ownReferrersOf is related.OwnReferrers over the backend kinds, reading
// c: whether a backend of one of them references a Secret or ConfigMap
// named after it.
func ownReferrersOf(c client.Reader, kinds []backendKind) related.OwnReferrers {
	return func(ctx context.Context, namespace, name string, reference func(string) string) bool {
		for _, kind := range kinds {
			if requests, failed := ownReferrers(ctx, c, kind, namespace, name, reference); failed || len(requests) > 0 {
				return true
			}
		}
		return false
	}
}

// enqueueReferrers returns a map function that enqueues every object of
// list's kind in the event object's namespace whose references index holds
// reference(name).
func enqueueReferrers(c client.Reader, newList func() client.ObjectList, reference func(string) string) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		return indexedRequests(ctx, c, newList, obj.GetNamespace(), related.ReferencesIndex, reference(obj.GetName()))
	}
}

// backendRefOf returns the backendRefIndex extractor of the objects of
// type T, whose spec.backendRef ref reads.
func backendRefOf[T client.Object](ref func(T) backendsv1alpha1.BackendReference) client.IndexerFunc {
	return func(obj client.Object) []string {
		o, ok := obj.(T)
		if !ok {
			return nil
		}
		r := ref(o)
		return []string{backendRefValue(r.Kind, r.Name)}
	}
}

// enqueueBackendReferrers returns a map function that enqueues every
// object of list's kind in the event object's namespace that names it, a
// backend of kind, in backendRefIndex.
func enqueueBackendReferrers(c client.Reader, newList func() client.ObjectList, kind string) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		return indexedRequests(ctx, c, newList, obj.GetNamespace(), backendRefIndex, backendRefValue(kind, obj.GetName()))
	}
}

// indexedRequests lists the objects of newList's kind in namespace whose
// field index holds value, and returns a request for each; none when the
// list fails.
func indexedRequests(ctx context.Context, c client.Reader, newList func() client.ObjectList, namespace, field, value string) []reconcile.Request {
	list := newList()
	if sr, ok := c.(*storeReader); ok {
		if keys, ok := sr.indexKeys(ctx, list, namespace, field, value); ok {
			requests := make([]reconcile.Request, 0, len(keys))
			for _, k := range keys {
				requests = append(requests, reconcile.Request{NamespacedName: k})
			}
			return requests
		}
	}
	// Only the names are read: the cache's objects need no copy.
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{field: value}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var requests []reconcile.Request
	_ = related.ForEachObject(list, func(o client.Object) {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
	})
	return requests
}

// backendRefIndex indexes the objects that name a backend (RemoteStates,
// StateLocks) by that backend, as "<Kind>/<name>", so that a change to a
// backend reconciles them.
const backendRefIndex = ".spec.backendRef"

func backendRefValue(kind, name string) string { return kind + "/" + name }
