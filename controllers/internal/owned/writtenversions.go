package owned

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Versions remembers, for each object the operator writes, the
// resourceVersion it last wrote or read in full and found as it should be.
// While the watched metadata still shows that version, nobody changed the
// object since: Writer then trusts the content-hash annotation the
// metadata carries and reads nothing from the API server. Another version
// means someone (perhaps the operator itself, in a write the cache has not
// caught up with) wrote it since, and it is read in full again.
//
// The versions are kept per owner, and an owner's are forgotten with it.
// They are lost on a restart, which therefore reads every written object
// once.
type Versions struct {
	mu sync.Mutex
	// byOwner holds the few objects of each writer (a backend writes two)
	// in a slice rather than a map: a map per backend would cost several
	// times the memory of the versions.
	byOwner map[WriterKey][]writtenVersion
}

// writtenVersion is the version recorded for one written object.
type writtenVersion struct {
	obj     writtenKey
	version string
}

// WriterKey names the object of this API that writes objects.
type WriterKey struct {
	Kind string
	types.NamespacedName
}

// writtenKey names an object it writes: its kind (ConfigMap or Secret) and
// name, in the writer's namespace.
type writtenKey struct {
	kind, name string
}

// NewVersions returns the versions of no object.
func NewVersions() *Versions {
	return &Versions{byOwner: map[WriterKey][]writtenVersion{}}
}

// get returns the version recorded for obj of writer, "" when none is.
func (v *Versions) get(writer WriterKey, obj writtenKey) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, w := range v.byOwner[writer] {
		if w.obj == obj {
			return w.version
		}
	}
	return ""
}

// set records version for obj of writer; an empty version forgets it.
func (v *Versions) set(writer WriterKey, obj writtenKey, version string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	objects := slices.DeleteFunc(v.byOwner[writer], func(w writtenVersion) bool { return w.obj == obj })
	if version != "" {
		objects = append(objects, writtenVersion{obj: obj, version: version})
	}
	if len(objects) == 0 {
		delete(v.byOwner, writer)
		return
	}
	v.byOwner[writer] = objects
}

// Forget drops every version recorded for writer, which is gone.
func (v *Versions) Forget(writer WriterKey) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.byOwner, writer)
}
