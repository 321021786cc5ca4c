package related

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Watches are the watches of the Secrets and the ConfigMaps related
// to the objects of this API (see relatedObjects), run by the manager.
type Watches struct {
	secrets, configMaps *relatedObjects
	// cache is the manager's cache of the objects of this API, whose
	// ReferencesIndex says which Secrets and ConfigMaps are related.
	cache cache.Cache
	// lists are the list types of every kind with a ReferencesIndex.
	lists []func() client.ObjectList
	// renderers make an object of each kind that renders ConfigMaps and
	// Secrets under names derived from its own (see WriterOf).
	renderers []func() client.Object
	client    metadata.Interface
	// contents are the contents of referenced objects, swept with the
	// watches.
	contents *Contents
	// owners make an object of each kind of this API that writes
	// Secrets and ConfigMaps, by kind (see HoldOwnedBy); nil holds every
	// object one of them controls.
	owners map[string]func() client.Object
	// ownReferrers, when set, finds the objects that reference a Secret
	// or ConfigMap named after them, which ReferencesIndex leaves out (see
	// OwnReference).
	ownReferrers OwnReferrers
}

// OwnReferrers reports whether an object of this API named after the
// Secret or ConfigMap name of namespace (see OwnerNames) references it,
// reference making its ReferencesIndex value. An error reading the cache
// counts as named, so that nothing is dropped by mistake.
type OwnReferrers func(ctx context.Context, namespace, name string, reference func(string) string) bool

// SetOwnReferrers has the watches find the objects that reference a
// Secret or ConfigMap named after them with f as well as with
// ReferencesIndex. Call it before Start.
func (w *Watches) SetOwnReferrers(f OwnReferrers) { w.ownReferrers = f }

// relatedSweepInterval is how often the watches drop the objects, and the
// contents, that no object of this API names or writes any longer.
const relatedSweepInterval = 5 * time.Minute

// NewWatches returns the watches of the Secrets and ConfigMaps of
// namespaces (all when empty) related to the objects in c of the kinds of
// lists, or rendered by those of renderers, which also sweep contents.
func NewWatches(c cache.Cache, mc metadata.Interface, namespaces []string, lists []func() client.ObjectList,
	renderers []func() client.Object, contents *Contents) *Watches {
	w := &Watches{cache: c, lists: lists, renderers: renderers, client: mc, contents: contents}
	w.secrets = newRelatedObjects("Secret", namespaces, w.related(SecretReference))
	w.configMaps = newRelatedObjects("ConfigMap", namespaces, w.related(ConfigMapReference))
	return w
}

// related returns the predicate of a kind whose ReferencesIndex values
// reference makes: an object is related when an object of this API
// controls it or names it.
func (w *Watches) related(reference func(string) string) func(context.Context, *metav1.PartialObjectMetadata) bool {
	return func(ctx context.Context, obj *metav1.PartialObjectMetadata) bool {
		if owner := ControllerOfThisAPI(obj); owner != nil {
			return w.ownerHeld(ctx, obj.Namespace, owner)
		}
		// The reads of the objects named after it last: they are the
		// most, one per dash of its name and kind.
		return namedByIndex(ctx, w.cache, w.lists, obj.Namespace, reference(obj.Name)) ||
			renderedByAny(ctx, w.cache, w.renderers, obj.Namespace, WriterOf(reference, obj.Name)) ||
			w.namedByOwner(ctx, obj.Namespace, obj.Name, reference)
	}
}

// renderedByAny reports whether an object of one of the kinds renderers
// make, called name, exists in namespace: the object of the default name
// it renders is related, whoever holds it. An error reading the cache
// counts as existing.
func renderedByAny(ctx context.Context, c client.Reader, renderers []func() client.Object, namespace, name string) bool {
	if name == "" {
		return false
	}
	for _, newObject := range renderers {
		// Only whether it exists is read: the cache's object needs no copy.
		err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, newObject(), client.UnsafeDisableDeepCopy)
		if err == nil || !apierrors.IsNotFound(err) {
			return true
		}
	}
	return false
}

// namedByAny reports whether an object of one of the watches' kinds in
// namespace names the Secret or ConfigMap name (reference making its
// ReferencesIndex value): has it in its ReferencesIndex, or references it
// under its own name (see SetOwnReferrers). An error reading the cache
// counts as named, so that nothing is dropped by mistake.
func (w *Watches) namedByAny(ctx context.Context, namespace, name string, reference func(string) string) bool {
	return namedByIndex(ctx, w.cache, w.lists, namespace, reference(name)) || w.namedByOwner(ctx, namespace, name, reference)
}

// namedByOwner reports whether an object named after the Secret or
// ConfigMap name of namespace references it (see SetOwnReferrers).
func (w *Watches) namedByOwner(ctx context.Context, namespace, name string, reference func(string) string) bool {
	return w.ownReferrers != nil && w.ownReferrers(ctx, namespace, name, reference)
}

// namedByIndex reports whether an object of one of the kinds of lists in
// namespace has reference in its ReferencesIndex; an error reading the
// cache counts as named.
func namedByIndex(ctx context.Context, c client.Reader, lists []func() client.ObjectList, namespace, reference string) bool {
	for _, newList := range lists {
		list := newList()
		err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{ReferencesIndex: reference},
			client.Limit(1), client.UnsafeDisableDeepCopy)
		if err != nil {
			return true
		}
		if n, _ := countItems(list); n > 0 {
			return true
		}
	}
	return false
}

// Start waits until the manager's cache holds the objects of this API
// (which decide what is related), starts both watches, and sweeps them
// and the referenced contents until ctx ends.
func (w *Watches) Start(ctx context.Context) error {
	for _, newList := range w.lists {
		list := newList()
		// Listing starts the kind's informer when nothing did yet.
		if err := w.cache.List(ctx, list, client.Limit(1)); err != nil {
			return fmt.Errorf("starting the informer of %T: %w", list, err)
		}
	}
	if !w.cache.WaitForCacheSync(ctx) {
		return errors.New("the manager's cache did not sync")
	}
	w.secrets.start(ctx, w.client)
	w.configMaps.start(ctx, w.client)

	ticker := time.NewTicker(relatedSweepInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			w.secrets.sweep(ctx)
			w.configMaps.sweep(ctx)
			w.contents.sweepUnreferenced(func(key ContentKey) bool {
				return w.namedByAny(ctx, key.Namespace, key.Name, key.referenceOf)
			})
		}
	}
}

// Observer sees each Secret or ConfigMap (kind says which) as a watch
// delivers it, trimmed as the watches hold it (see KeptAnnotations), or
// its deletion: every object of the watched namespaces, related or not,
// those of the first list included. It must not block.
type Observer func(kind string, obj *metav1.PartialObjectMetadata, deleted bool)

// Observe registers o with both watches. Call it before Start: the objects
// of the first lists reach only the observers registered by then.
func (w *Watches) Observe(o Observer) {
	w.secrets.addObserver(o)
	w.configMaps.addObserver(o)
}

// of returns the watch of kind.
func (w *Watches) of(kind string) (*relatedObjects, bool) {
	switch kind {
	case "Secret":
		return w.secrets, true
	case "ConfigMap":
		return w.configMaps, true
	}
	return nil, false
}

// Reader reads the metadata that Watches hold, as a
// client.Reader: Get of a *metav1.PartialObjectMetadata of kind Secret or
// ConfigMap. An object not held is NotFound.
type Reader struct{ Watches *Watches }

var _ client.Reader = Reader{}

// Get copies the metadata held for key into obj.
func (r Reader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	meta, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return fmt.Errorf("related objects hold metadata only, not %T", obj)
	}
	w, ok := r.Watches.of(meta.Kind)
	if !ok {
		return fmt.Errorf("no related objects of kind %q", meta.Kind)
	}
	held, ok := w.get(key)
	if !ok {
		return apierrors.NewNotFound(w.resource.GroupResource(), key.Name)
	}
	*meta = *held
	return nil
}

// List is not supported: callers get one object by name.
func (r Reader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("related objects are read one by name")
}

// Remember holds the metadata of obj (a Secret or ConfigMap) read from the
// API server for an object that names it (see relatedObjects.Remember).
func (r Reader) Remember(kind string, obj metav1.Object) {
	if w, ok := r.Watches.of(kind); ok {
		w.remember(obj)
	}
}

// Source is the source of a controller's events of the related
// Secrets or ConfigMaps: it hands every event of the watch to h.
type Source struct {
	watch *relatedObjects
	h     handler.EventHandler
}

// Source returns the controller Source of kind's events for h.
func (w *Watches) Source(kind string, h handler.EventHandler) Source {
	objects, ok := w.of(kind)
	if !ok {
		panic("no related objects of kind " + kind)
	}
	return Source{watch: objects, h: h}
}

// Start registers the handler with the watch.
func (s Source) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.watch.addHandler(func(ctx context.Context, event relatedEvent, obj *metav1.PartialObjectMetadata) {
		switch event {
		case relatedCreated:
			s.h.Create(ctx, ctrlevent.CreateEvent{Object: obj}, q)
		case relatedUpdated:
			s.h.Update(ctx, ctrlevent.UpdateEvent{ObjectOld: obj, ObjectNew: obj}, q)
		case relatedDeleted:
			s.h.Delete(ctx, ctrlevent.DeleteEvent{Object: obj}, q)
		}
	})
	return nil
}

// WaitForSync waits for the watch's first lists, so that the controller's
// workers start with the related objects held.
func (s Source) WaitForSync(ctx context.Context) error {
	return s.watch.waitForSync(ctx)
}

// MetadataFromAPI reads the metadata of the Secret or ConfigMap key from
// the API server, as a list by name (never a read of the object itself,
// which a reference policy may forbid), drops its annotations but those
// KeptAnnotations keeps, and has a relatedReader holder hold it. found is false
// when it does not exist.
func MetadataFromAPI(ctx context.Context, reader, holder client.Reader, kind string, key types.NamespacedName) (meta *metav1.PartialObjectMetadata, found bool, err error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind + "List"))
	if err := reader.List(ctx, list, client.InNamespace(key.Namespace), client.MatchingFields{"metadata.name": key.Name}); err != nil {
		return nil, false, fmt.Errorf("listing the metadata of %s %s: %w", kind, key, err)
	}
	for i := range list.Items {
		if list.Items[i].Name != key.Name {
			continue
		}
		meta = trimMetadata(kind, &list.Items[i])
		if related, ok := holder.(Reader); ok {
			related.Remember(kind, meta)
		}
		return meta, true, nil
	}
	return nil, false, nil
}
