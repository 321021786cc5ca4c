package related

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Contents keeps in memory the contents of the Secrets and
// ConfigMaps that objects of this API reference, each with the
// resourceVersion it was read at. The manager watches every Secret and
// ConfigMap for metadata: while the watched version is the one read, the
// content read is still the content, and a reconcile or a periodic probe
// of an unchanged backend reads nothing from the API server.
//
// Only objects read because an object references them enter it (the
// manager still never caches the Secrets of the cluster), and
// sweepUnreferenced drops those no object references any longer (see
// Watches.Start).
type Contents struct {
	mu      sync.Mutex
	entries map[ContentKey]client.Object
}

// ContentKey names a Secret or ConfigMap.
type ContentKey struct {
	Kind string // "Secret" or "ConfigMap"
	types.NamespacedName
}

// reference is the ReferencesIndex value of the object key names.
func (k ContentKey) reference() string {
	if k.Kind == "ConfigMap" {
		return ConfigMapReference(k.Name)
	}
	return SecretReference(k.Name)
}

// NewContents returns no content.
func NewContents() *Contents {
	return &Contents{entries: map[ContentKey]client.Object{}}
}

// Get copies into obj (a *corev1.Secret or *corev1.ConfigMap) the content
// of key read at version, and reports whether it had it.
func (c *Contents) Get(key ContentKey, version string, obj client.Object) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept, ok := c.entries[key]
	if !ok || kept.GetResourceVersion() != version {
		return false
	}
	switch dst := obj.(type) {
	case *corev1.Secret:
		src, ok := kept.(*corev1.Secret)
		if ok {
			src.DeepCopyInto(dst)
		}
		return ok
	case *corev1.ConfigMap:
		src, ok := kept.(*corev1.ConfigMap)
		if ok {
			src.DeepCopyInto(dst)
		}
		return ok
	}
	return false
}

// Put keeps a copy of obj, read from the API server, as key's content.
// Its annotations are dropped: kubectl keeps a copy of the data in one.
func (c *Contents) Put(key ContentKey, obj client.Object) {
	kept, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return
	}
	kept.SetAnnotations(nil)
	kept.SetManagedFields(nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = kept
}

// Forget drops key's content.
func (c *Contents) Forget(key ContentKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
}

// keys returns the keys it holds.
func (c *Contents) keys() []ContentKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]ContentKey, 0, len(c.entries))
	for k := range c.entries {
		keys = append(keys, k)
	}
	return keys
}

// sweepUnreferenced forgets the contents of the objects that referenced
// says no object references any longer.
func (c *Contents) sweepUnreferenced(referenced func(ContentKey) bool) {
	for _, key := range c.keys() {
		if !referenced(key) {
			c.Forget(key)
		}
	}
}
