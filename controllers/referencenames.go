package controllers

import (
	"strings"

	"github.com/infrastate/backend-operator/internal/render"
)

// referencesIndex indexes objects by the Secrets and ConfigMaps they
// reference or write, as "Secret/<name>" and "ConfigMap/<name>", so that a
// change to one of them reconciles exactly the objects that read it, and
// the deletion of a foreign object that took a name an object writes
// (NameConflict) lets that object write it at once. The names a backend
// renders by default, derived from its own name, are not indexed (see
// renderedReferences and writerOf).
const referencesIndex = ".spec.references"

func secretReference(name string) string { return "Secret/" + name }

func configMapReference(name string) string { return "ConfigMap/" + name }

// backendRefIndex indexes the objects that name a backend (RemoteStates,
// StateLocks) by that backend, as "<Kind>/<name>", so that a change to a
// backend reconciles them.
const backendRefIndex = ".spec.backendRef"

func backendRefValue(kind, name string) string { return kind + "/" + name }

// writerOf returns the name of the backend that renders the Secret or
// ConfigMap (reference names its kind) called name under a default name,
// "" when name is no such name.
func writerOf(reference func(string) string, name string) string {
	suffix := render.CredentialsSecretName("")
	if reference(name) == configMapReference(name) {
		suffix = render.DefaultConfigMapName("")
	}
	backend, ok := strings.CutSuffix(name, suffix)
	if !ok || backend == "" {
		return ""
	}
	return backend
}
