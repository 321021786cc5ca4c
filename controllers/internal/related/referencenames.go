package related

import (
	"strings"

	"github.com/infrastate/backend-operator/internal/render"
)

// ReferencesIndex indexes objects by the Secrets and ConfigMaps they
// reference or write, as "Secret/<name>" and "ConfigMap/<name>", so that a
// change to one of them reconciles exactly the objects that read it, and
// the deletion of a foreign object that took a name an object writes
// (NameConflict) lets that object write it at once. The names a backend
// renders by default, derived from its own name, are not indexed (see
// WriterOf), nor the names a backend's references take after its own (see
// OwnReference): a value that one object alone holds costs the cache a
// map of its own, twice, about 700 bytes per backend.
const ReferencesIndex = ".spec.references"

// SecretReference is the ReferencesIndex value of the Secret name.
func SecretReference(name string) string { return "Secret/" + name }

// ConfigMapReference is the ReferencesIndex value of the ConfigMap name.
func ConfigMapReference(name string) string { return "ConfigMap/" + name }

// WriterOf returns the name of the backend that renders the Secret or
// ConfigMap (reference names its kind) called name under a default name,
// "" when name is no such name.
func WriterOf(reference func(string) string, name string) string {
	suffix := render.CredentialsSecretName("")
	if reference(name) == ConfigMapReference(name) {
		suffix = render.DefaultConfigMapName("")
	}
	backend, ok := strings.CutSuffix(name, suffix)
	if !ok || backend == "" {
		return ""
	}
	return backend
}

// OwnReference reports whether the Secret or ConfigMap name is named after
// the object owner: its name is owner's, a dash and more ("web-password"
// for the backend "web"), as a backend's own password or certificate
// Secret often is. The backends' ReferencesIndex values leave such
// references out: OwnerNames finds, from a name, the objects it may be
// named after, whose references then tell.
func OwnReference(owner, name string) bool {
	return len(name) > len(owner)+1 && name[len(owner)] == '-' && strings.HasPrefix(name, owner)
}

// OwnerNames are the names of the objects that name may be named after
// (see OwnReference): each of its prefixes that a dash follows, the
// shortest first.
func OwnerNames(name string) []string {
	var owners []string
	for i := 1; i < len(name)-1; i++ {
		if name[i] == '-' {
			owners = append(owners, name[:i])
		}
	}
	return owners
}
