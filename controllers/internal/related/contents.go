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
	data []binaryEntry
	// text are a ConfigMap's data.
	text []textEntry
}

type binaryEntry struct {
	key   string
	value []byte
}

type textEntry struct {
	key, value string
}

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
		*dst = corev1.Secret{ObjectMeta: meta, Type: kept.secretType, Data: binaryMap(kept.data)}
		return true
	case *corev1.ConfigMap:
		if kept.secret {
			return false
		}
		*dst = corev1.ConfigMap{ObjectMeta: meta, Data: textMap(kept.text), BinaryData: binaryMap(kept.data)}
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
		kept.secret, kept.secretType, kept.data = true, src.Type, binaryEntries(src.Data)
	case *corev1.ConfigMap:
		kept.text, kept.data = textEntries(src.Data), binaryEntries(src.BinaryData)
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = kept
}

// binaryEntries copies m, sorted by key; nil for nil.
func binaryEntries(m map[string][]byte) []binaryEntry {
	if m == nil {
		return nil
	}
	out := make([]binaryEntry, 0, len(m))
	for k, v := range m {
		out = append(out, binaryEntry{key: k, value: bytes.Clone(v)})
	}
	slices.SortFunc(out, func(a, b binaryEntry) int { return strings.Compare(a.key, b.key) })
	return out
}

// textEntries copies m, sorted by key; nil for nil.
func textEntries(m map[string]string) []textEntry {
	if m == nil {
		return nil
	}
	out := make([]textEntry, 0, len(m))
	for k, v := range m {
		out = append(out, textEntry{key: k, value: v})
	}
	slices.SortFunc(out, func(a, b textEntry) int { return strings.Compare(a.key, b.key) })
	return out
}

// binaryMap is a copy of entries as a map, nil for nil: the caller may
// change it.
func binaryMap(entries []binaryEntry) map[string][]byte {
	if entries == nil {
		return nil
	}
	m := make(map[string][]byte, len(entries))
	for _, e := range entries {
		m[e.key] = bytes.Clone(e.value)
	}
	return m
}

// textMap is entries as a map, nil for nil.
func textMap(entries []textEntry) map[string]string {
	if entries == nil {
		return nil
	}
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		m[e.key] = e.value
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
