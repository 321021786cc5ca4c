package related

import (
	"context"
	"fmt"
	"maps"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/infrastate/backend-operator/controllers/internal/intern"
)

// relatedObjects watches the metadata of every Secret, or of every
// ConfigMap, that the manager may see (all namespaces, or the watched
// ones), and keeps in memory only those related to an object of this API:
// written by one (its controller is of this API's group) or named by one
// (referenced, rendered or published: see ReferencesIndex). Every event
// still reaches the handlers, which reconcile the objects that name it,
// but an unrelated object costs no memory: the manager holds as many
// Secrets and ConfigMaps as its own objects name or write, however many
// the cluster has. A controller-runtime informer would keep them all.
//
// What it holds is trimmed (see heldObject), so that no annotation but the
// operator's content hash and stored size, which hold no secret, is ever
// kept.
//
// An object it does not hold is either absent or unrelated: callers that
// must tell the two apart read the API server (see referenceReader), or
// let the create of a name that exists fail (see owned.Writer). An object
// that becomes related between two of its events (a new backend names an
// existing Secret) is held from its next event on, or from when a
// reconcile reads it and remembers it.
type relatedObjects struct {
	kind     string // "Secret" or "ConfigMap"
	resource schema.GroupVersionResource
	// related reports whether an object of this API names or writes the
	// object.
	related func(context.Context, *metav1.PartialObjectMetadata) bool

	// spaces keeps one copy of each namespace the keys of objects name,
	// rather than one decoded for each object.
	spaces *intern.Table

	mu       sync.RWMutex
	objects  map[types.NamespacedName]*heldObject
	handlers []relatedHandler
	// observers see every object the watch delivers, the first list
	// included, and every deletion (see Watches.Observe).
	observers []Observer
	// listed records the namespaces whose first list is done.
	listed map[string]bool
	synced chan struct{}
	// namespaces are the namespaces watched; empty watches all.
	namespaces []string
}

// relatedEvent is the kind of change an event reports.
type relatedEvent int

// The changes of an object.
const (
	relatedCreated relatedEvent = iota
	relatedUpdated
	relatedDeleted
)

// relatedHandler receives every event of every watched object.
type relatedHandler func(ctx context.Context, event relatedEvent, obj *metav1.PartialObjectMetadata)

// newRelatedObjects returns the watch of kind ("Secret" or "ConfigMap") in
// namespaces (all when empty), holding the objects related says are.
func newRelatedObjects(kind string, namespaces []string, related func(context.Context, *metav1.PartialObjectMetadata) bool) *relatedObjects {
	return &relatedObjects{
		kind:       kind,
		resource:   schema.GroupVersionResource{Version: "v1", Resource: resourceOf(kind)},
		related:    related,
		spaces:     intern.New(heldNamespacesLimit, heldNamespaceMaxLen),
		objects:    map[types.NamespacedName]*heldObject{},
		listed:     map[string]bool{},
		synced:     make(chan struct{}),
		namespaces: namespaces,
	}
}

// Bounds of the namespaces a relatedObjects keeps one copy of: the
// namespaces of the objects it held lately (a namespace name is at most 63
// bytes).
const (
	heldNamespacesLimit = 1024
	heldNamespaceMaxLen = 63
)

// key is the key obj is held under, its namespace the copy spaces holds.
func (w *relatedObjects) key(obj metav1.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: w.spaces.String(obj.GetNamespace()), Name: obj.GetName()}
}

// resourceOf is the API resource of a core kind the operator watches.
func resourceOf(kind string) string {
	if kind == "ConfigMap" {
		return "configmaps"
	}
	return "secrets"
}

// addHandler registers h for every event from now on. Objects listed
// before are not replayed: the objects of this API are all reconciled
// when the manager starts.
func (w *relatedObjects) addHandler(h relatedHandler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handlers = append(w.handlers, h)
}

// addObserver registers o for every object from the first list on.
func (w *relatedObjects) addObserver(o Observer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.observers = append(w.observers, o)
}

// notify calls every observer with obj.
func (w *relatedObjects) notify(obj *metav1.PartialObjectMetadata, deleted bool) {
	w.mu.RLock()
	observers := w.observers
	w.mu.RUnlock()
	for _, o := range observers {
		o(w.kind, obj, deleted)
	}
}

// get returns the metadata of key, when it is held.
func (w *relatedObjects) get(key types.NamespacedName) (*metav1.PartialObjectMetadata, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	obj, ok := w.objects[key]
	if !ok {
		return nil, false
	}
	return obj.metadata(w.kind, key), true
}

// remember holds the metadata of obj, read from the API server for an
// object that names it, unless the watch delivered a version already: the
// watch is never older than what it replaces.
func (w *relatedObjects) remember(obj metav1.Object) {
	held := holdObject(obj)
	key := w.key(obj)
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.objects[key]; !ok {
		w.objects[key] = held
	}
}

// sweep drops the objects that are no longer related.
func (w *relatedObjects) sweep(ctx context.Context) {
	w.mu.RLock()
	held := maps.Clone(w.objects)
	w.mu.RUnlock()
	for key, obj := range held {
		if !w.related(ctx, obj.metadata(w.kind, key)) {
			w.mu.Lock()
			if w.objects[key] == obj { // not replaced meanwhile
				delete(w.objects, key)
			}
			w.mu.Unlock()
		}
	}
}

// start watches until ctx ends: one reflector per namespace, or one for
// all. It returns at once; waitForSync tells when every first list is
// done.
func (w *relatedObjects) start(ctx context.Context, client metadata.Interface) {
	namespaces := w.namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		resource := client.Resource(w.resource).Namespace(ns)
		lw := &toolscache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				return resource.List(ctx, opts)
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				return resource.Watch(ctx, opts)
			},
		}
		store := &relatedStore{watch: w, ctx: ctx, namespace: ns}
		r := toolscache.NewReflectorWithOptions(lw, &metav1.PartialObjectMetadata{}, store,
			toolscache.ReflectorOptions{Name: fmt.Sprintf("related %s in %q", w.resource.Resource, ns)})
		go r.RunWithContext(ctx)
	}
}

// waitForSync waits until every first list is done, or ctx ends.
func (w *relatedObjects) waitForSync(ctx context.Context) error {
	select {
	case <-w.synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the first list of %s: %w", w.resource.Resource, ctx.Err())
	}
}

// fire calls every handler with event.
func (w *relatedObjects) fire(ctx context.Context, event relatedEvent, obj *metav1.PartialObjectMetadata) {
	w.mu.RLock()
	handlers := w.handlers
	w.mu.RUnlock()
	for _, h := range handlers {
		h(ctx, event, obj)
	}
}

// observe records obj as the watch delivered it and returns the held
// metadata it replaces (nil when none). It holds obj when it was held or
// is related.
func (w *relatedObjects) observe(ctx context.Context, obj *metav1.PartialObjectMetadata) (previous *heldObject) {
	key := w.key(obj)
	w.mu.RLock()
	previous = w.objects[key]
	w.mu.RUnlock()
	if previous == nil && !w.related(ctx, obj) {
		return nil
	}
	w.mu.Lock()
	w.objects[key] = holdObject(obj)
	w.mu.Unlock()
	return previous
}

// forgetKey drops key.
func (w *relatedObjects) forgetKey(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.objects, key)
}

// markListed records the end of the first list of namespace's watch.
func (w *relatedObjects) markListed(namespace string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.listed[namespace] {
		return
	}
	w.listed[namespace] = true
	want := max(len(w.namespaces), 1)
	if len(w.listed) == want {
		close(w.synced)
	}
}

// trimMetadata is what relatedObjects keeps of an object of kind: its
// identity, version, labels, owners and the annotations KeptAnnotations
// keeps.
func trimMetadata(kind string, obj metav1.Object) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       obj.GetNamespace(),
			Name:            obj.GetName(),
			UID:             obj.GetUID(),
			ResourceVersion: obj.GetResourceVersion(),
			Labels:          obj.GetLabels(),
			OwnerReferences: obj.GetOwnerReferences(),
			Annotations:     KeptAnnotations(obj.GetAnnotations()),
		},
	}
}

// relatedStore is the store a reflector of relatedObjects writes to: it
// turns the reflector's calls into events and held objects.
type relatedStore struct {
	watch     *relatedObjects
	ctx       context.Context //nolint:containedctx // the watch's, for the handlers the reflector's calls reach
	namespace string
	// replaced is true once the first list was stored.
	replaced bool
}

var _ toolscache.TransformingStore = (*relatedStore)(nil)

// Transformer trims every object as soon as the reflector decodes it, so
// that the list a reflector collects before its first Replace (a watch
// list's temporary store) holds no annotation, managed field or finalizer
// of the cluster's Secrets either.
func (s *relatedStore) Transformer() toolscache.TransformFunc {
	return func(obj any) (any, error) {
		if m, ok := obj.(metav1.Object); ok {
			return trimMetadata(s.watch.kind, m), nil
		}
		return obj, nil
	}
}

// metadataOf trims a PartialObjectMetadata the reflector delivers.
func (s *relatedStore) metadataOf(obj any) (*metav1.PartialObjectMetadata, error) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("related %s: unexpected %T", s.watch.resource.Resource, obj)
	}
	return trimMetadata(s.watch.kind, m), nil
}

// Add reports a new object.
func (s *relatedStore) Add(obj any) error {
	m, err := s.metadataOf(obj)
	if err != nil {
		return err
	}
	s.watch.observe(s.ctx, m)
	s.watch.notify(m, false)
	s.watch.fire(s.ctx, relatedCreated, m)
	return nil
}

// Update reports a changed object.
func (s *relatedStore) Update(obj any) error {
	m, err := s.metadataOf(obj)
	if err != nil {
		return err
	}
	s.watch.observe(s.ctx, m)
	s.watch.notify(m, false)
	s.watch.fire(s.ctx, relatedUpdated, m)
	return nil
}

// Delete reports a deleted object.
func (s *relatedStore) Delete(obj any) error {
	m, err := s.metadataOf(obj)
	if err != nil {
		return err
	}
	s.watch.forgetKey(types.NamespacedName{Namespace: m.Namespace, Name: m.Name})
	s.watch.notify(m, true)
	s.watch.fire(s.ctx, relatedDeleted, m)
	return nil
}

// Replace stores a new list. The first one only fills the objects held:
// every object of this API is reconciled when the manager starts. A later
// one (the watch broke and the reflector listed again) reports what
// changed meanwhile: objects new or of another version as created or
// updated, and the held ones missing from it as deleted.
func (s *relatedStore) Replace(list []any, _ string) error {
	first := !s.replaced
	s.replaced = true
	// The objects held before a later list, until the list shows them:
	// those left were deleted meanwhile.
	var missing map[types.NamespacedName]*metav1.PartialObjectMetadata
	if !first {
		missing = map[types.NamespacedName]*metav1.PartialObjectMetadata{}
		for _, held := range s.watch.heldIn(s.namespace) {
			missing[types.NamespacedName{Namespace: held.Namespace, Name: held.Name}] = held
		}
	}
	for _, obj := range list {
		m, err := s.metadataOf(obj)
		if err != nil {
			return err
		}
		delete(missing, types.NamespacedName{Namespace: m.Namespace, Name: m.Name})
		previous := s.watch.observe(s.ctx, m)
		s.watch.notify(m, false)
		switch {
		case first:
		case previous == nil:
			s.watch.fire(s.ctx, relatedCreated, m)
		case previous.resourceVersion != m.ResourceVersion:
			s.watch.fire(s.ctx, relatedUpdated, m)
		}
	}
	for key, held := range missing {
		s.watch.forgetKey(key)
		s.watch.notify(held, true)
		s.watch.fire(s.ctx, relatedDeleted, held)
	}
	s.watch.markListed(s.namespace)
	return nil
}

// Resync does nothing: there is no queue to resync.
func (s *relatedStore) Resync() error { return nil }

// heldIn returns the objects held in namespace (all namespaces for "").
func (w *relatedObjects) heldIn(namespace string) []*metav1.PartialObjectMetadata {
	w.mu.RLock()
	defer w.mu.RUnlock()
	var out []*metav1.PartialObjectMetadata
	for key, obj := range w.objects {
		if namespace == metav1.NamespaceAll || key.Namespace == namespace {
			out = append(out, obj.metadata(w.kind, key))
		}
	}
	return out
}
