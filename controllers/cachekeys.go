package controllers

import (
	"context"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// storeReader is a client.Reader that also answers the two questions every
// watch event of a Secret, a ConfigMap or a backend asks, for each kind
// and each controller that watches them (see indexedRequests and
// ownReferrers): which objects a field index maps a value to, and whether
// the cache holds an object. It answers them from the store of the
// cache's informer for the kind, as its List and Get would, without their
// per-call costs: a list and its items allocated and filled by
// reflection, a field selector parsed, a NotFound error formatted for
// every miss. Those were about a fifth of the manager's allocations in a
// cold start, and most of its event handlers' CPU.
//
// Where the cache has no single store for a kind (the manager watches a
// list of namespaces, an informer per namespace), it answers nothing and
// the callers fall back to List and Get.
type storeReader struct {
	client.Reader
	cache  cache.Cache
	scheme *runtime.Scheme
	// stores maps the reflect.Type of an object or a list to the
	// storeInformer of its kind, once found.
	stores sync.Map
}

// newStoreReader returns a storeReader that reads through r and the
// stores of c's informers, resolving kinds with scheme.
func newStoreReader(r client.Reader, c cache.Cache, scheme *runtime.Scheme) *storeReader {
	return &storeReader{Reader: r, cache: c, scheme: scheme}
}

// The names controller-runtime's cache gives a field index and its values
// (client.FieldIndexer.IndexField): the index "field:<field>", and each
// value under "<namespace>/<value>" and "__all_namespaces/<value>". The
// envtest suite checks that indexKeys and the cache's List agree.
const (
	fieldIndexPrefix       = "field:"
	allNamespacesIndexedAs = "__all_namespaces"
)

// indexKeys returns the keys of the objects of list's kind in namespace
// (every namespace when empty) whose field index holds value, and false
// when it cannot read the kind's store: the caller lists instead.
func (r *storeReader) indexKeys(ctx context.Context, list client.ObjectList, namespace, field, value string) ([]types.NamespacedName, bool) {
	store := r.store(ctx, list)
	if store == nil {
		return nil, false
	}
	scope := namespace
	if scope == "" {
		scope = allNamespacesIndexedAs
	}
	keys, err := store.IndexKeys(fieldIndexPrefix+field, scope+"/"+value)
	if err != nil {
		return nil, false
	}
	names := make([]types.NamespacedName, 0, len(keys))
	for _, k := range keys {
		ns, name, err := toolscache.SplitMetaNamespaceKey(k)
		if err != nil {
			return nil, false
		}
		names = append(names, types.NamespacedName{Namespace: ns, Name: name})
	}
	return names, true
}

// cached returns the cache's object of obj's kind under key, to be read
// and never changed, nil when the cache does not hold it, and false when
// it cannot read the kind's store: the caller gets instead.
func (r *storeReader) cached(ctx context.Context, obj client.Object, key types.NamespacedName) (client.Object, bool) {
	store := r.store(ctx, obj)
	if store == nil {
		return nil, false
	}
	item, exists, err := store.GetByKey(key.String())
	if err != nil {
		return nil, false
	}
	if !exists {
		return nil, true
	}
	o, ok := item.(client.Object)
	if !ok || reflect.TypeOf(o) != reflect.TypeOf(obj) {
		return nil, false
	}
	return o, true
}

// store returns the store of the informer of obj's kind (the kind of its
// items for a list), nil when the cache has none that it can read or the
// informer has not synced yet (List and Get wait for it).
func (r *storeReader) store(ctx context.Context, obj runtime.Object) toolscache.Indexer {
	t := reflect.TypeOf(obj)
	var inf storeInformer
	if found, ok := r.stores.Load(t); ok {
		inf, _ = found.(storeInformer)
	} else if inf = r.resolve(ctx, obj); inf != nil {
		// Only an informer found is kept: one not found yet (not
		// started) may be later.
		r.stores.Store(t, inf)
	}
	if inf == nil || !inf.HasSynced() {
		return nil
	}
	return inf.GetIndexer()
}

// storeInformer is an informer with one store: the cache's informer of a
// kind, unless the manager watches a list of namespaces.
type storeInformer interface {
	GetIndexer() toolscache.Indexer
	HasSynced() bool
}

// resolve finds the informer of obj's kind, without waiting for it.
func (r *storeReader) resolve(ctx context.Context, obj runtime.Object) storeInformer {
	gvk, err := apiutil.GVKForObject(obj, r.scheme)
	if err != nil {
		return nil
	}
	if _, isList := obj.(client.ObjectList); isList {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	item, err := r.scheme.New(gvk)
	if err != nil {
		return nil
	}
	o, ok := item.(client.Object)
	if !ok {
		return nil
	}
	informer, err := r.cache.GetInformer(ctx, o, cache.BlockUntilSynced(false))
	if err != nil {
		return nil
	}
	inf, _ := informer.(storeInformer)
	return inf
}

// watchReader is the reader of the map functions of mgr's watches: the
// manager's client, which reads its cache, with the stores of its
// informers (see storeReader).
func watchReader(mgr manager.Manager) *storeReader {
	return newStoreReader(mgr.GetClient(), mgr.GetCache(), mgr.GetScheme())
}
