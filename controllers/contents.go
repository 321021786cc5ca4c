package controllers

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// referencedContents keeps in memory the contents of the Secrets and
// ConfigMaps that objects of this API reference, each with the
// resourceVersion it was read at. The manager watches every Secret and
// ConfigMap for metadata: while the watched version is the one read, the
// content read is still the content, and a reconcile or a periodic probe
// of an unchanged backend reads nothing from the API server.
//
// Only objects read because an object references them enter it (the
// manager still never caches the Secrets of the cluster), and
// sweepUnreferenced drops those no object references any longer (see
// relatedWatches.Start).
type referencedContents struct {
	mu      sync.Mutex
	entries map[contentKey]client.Object
}

// contentKey names a Secret or ConfigMap.
type contentKey struct {
	kind string // "Secret" or "ConfigMap"
	types.NamespacedName
}

// reference is the referencesIndex value of the object key names.
func (k contentKey) reference() string {
	if k.kind == "ConfigMap" {
		return configMapReference(k.Name)
	}
	return secretReference(k.Name)
}

func newReferencedContents() *referencedContents {
	return &referencedContents{entries: map[contentKey]client.Object{}}
}

// get copies into obj (a *corev1.Secret or *corev1.ConfigMap) the content
// of key read at version, and reports whether it had it.
func (c *referencedContents) get(key contentKey, version string, obj client.Object) bool {
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

// put keeps a copy of obj, read from the API server, as key's content.
// Its annotations are dropped: kubectl keeps a copy of the data in one.
func (c *referencedContents) put(key contentKey, obj client.Object) {
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

// forget drops key's content.
func (c *referencedContents) forget(key contentKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
}

// keys returns the keys it holds.
func (c *referencedContents) keys() []contentKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]contentKey, 0, len(c.entries))
	for k := range c.entries {
		keys = append(keys, k)
	}
	return keys
}

// sweepUnreferenced forgets the contents of the objects that referenced
// says no object references any longer.
func (c *referencedContents) sweepUnreferenced(referenced func(contentKey) bool) {
	for _, key := range c.keys() {
		if !referenced(key) {
			c.forget(key)
		}
	}
}
