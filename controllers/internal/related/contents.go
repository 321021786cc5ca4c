package related

import (
	"bytes"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
//
// It keeps only what the readers of a reference use: the version, a
// Secret's type and the data, keys and values, without the metadata or
// the maps of the object read (see content). Get gives back an object
// with its namespace, name and version, and that content.
type Contents struct {
	mu      sync.Mutex
	entries map[ContentKey]content
}

// ContentKey names a Secret or ConfigMap.
type ContentKey struct {
	Kind string // "Secret" or "ConfigMap"
	types.NamespacedName
}

// referenceOf is the ReferencesIndex value of the object of key's kind
// called name.
func (k ContentKey) referenceOf(name string) string {
	if k.Kind == "ConfigMap" {
		return ConfigMapReference(name)
	}
	return SecretReference(name)
}

// content is what Contents keeps of one object: a handful of keys in
// slices sorted by key rather than maps (a map of one key costs several
// times its data), and none of the metadata but the version.
type content struct {
	version string
	// secret is true for a Secret, whose type is secretType.
	secret     bool
	secretType corev1.SecretType
	// data are a Secret's data, or a ConfigMap's binaryData.
	data []entry[[]byte]
	// text are a ConfigMap's data.
	text []entry[string]
}

// entry is one key of a Secret's or ConfigMap's data.
type entry[V any] struct {
	key   string
	value V
}

// sameString is a string's copy: itself, since a string cannot change.
func sameString(s string) string { return s }

// NewContents returns no content.
func NewContents() *Contents {
	return &Contents{entries: map[ContentKey]content{}}
}

// Get copies into obj (a *corev1.Secret or *corev1.ConfigMap) the content
// of key read at version, and reports whether it had it. obj gets key's
// namespace and name, the version, and the content: a Secret's type and
// data, a ConfigMap's data and binaryData.
func (c *Contents) Get(key ContentKey, version string, obj client.Object) bool {
	c.mu.Lock()
	kept, ok := c.entries[key]
	c.mu.Unlock()
	if !ok || kept.version != version {
		return false
	}
	meta := metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, ResourceVersion: kept.version}
	switch dst := obj.(type) {
	case *corev1.Secret:
		if !kept.secret {
			return false
		}
		*dst = corev1.Secret{ObjectMeta: meta, Type: kept.secretType, Data: entryMap(kept.data, bytes.Clone)}
		return true
	case *corev1.ConfigMap:
		if kept.secret {
			return false
		}
		*dst = corev1.ConfigMap{ObjectMeta: meta, Data: entryMap(kept.text, sameString), BinaryData: entryMap(kept.data, bytes.Clone)}
		return true
	}
	return false
}

// Put keeps a copy of the content of obj, read from the API server, as
// key's (see content). Its annotations are never kept: kubectl keeps a
// copy of the data in one.
func (c *Contents) Put(key ContentKey, obj client.Object) {
	kept := content{version: obj.GetResourceVersion()}
	switch src := obj.(type) {
	case *corev1.Secret:
		kept.secret, kept.secretType, kept.data = true, src.Type, sortedEntries(src.Data, bytes.Clone)
	case *corev1.ConfigMap:
		kept.text, kept.data = sortedEntries(src.Data, sameString), sortedEntries(src.BinaryData, bytes.Clone)
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = kept
}

// sortedEntries copies m, each value with clone, sorted by key; nil for
// nil.
func sortedEntries[V any](m map[string]V, clone func(V) V) []entry[V] {
	if m == nil {
		return nil
	}
	out := make([]entry[V], 0, len(m))
	for k, v := range m {
		out = append(out, entry[V]{key: k, value: clone(v)})
	}
	slices.SortFunc(out, func(a, b entry[V]) int { return strings.Compare(a.key, b.key) })
	return out
}

// entryMap is a copy of entries as a map, each value copied with clone,
// nil for nil: the caller may change it.
func entryMap[V any](entries []entry[V], clone func(V) V) map[string]V {
	if entries == nil {
		return nil
	}
	m := make(map[string]V, len(entries))
	for _, e := range entries {
		m[e.key] = clone(e.value)
	}
	return m
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
