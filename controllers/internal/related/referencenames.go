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
// WriterOf).
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
