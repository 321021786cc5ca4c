package outputs

import (
	"maps"

	corev1 "k8s.io/api/core/v1"

	"github.com/infrastate/backend-operator/internal/render"
)

// RemoteStateLabel marks the objects a RemoteState publishes, with the
// RemoteState's name (shortened as render.BackendLabelValue does).
const RemoteStateLabel = "backends.infrastate.io/remote-state"

// DefaultTargetName is the default name of both published objects.
func DefaultTargetName(remoteStateName string) string { return remoteStateName + "-outputs" }

// Labels returns the labels of the objects published for a RemoteState.
func Labels(remoteStateName string) map[string]string {
	return map[string]string{
		render.ManagedByLabel: render.ManagedByValue,
		RemoteStateLabel:      render.BackendLabelValue(remoteStateName),
	}
}

// ConfigMap returns the ConfigMap of the plain outputs, controlled by owner.
func ConfigMap(owner render.Owner, name string, plain map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: render.OwnedObjectMeta(owner, name, Labels(owner.Name)),
		Data:       maps.Clone(plain),
	}
}

// Secret returns the Secret of the sensitive outputs, controlled by owner.
// It exists even when no output is sensitive, so that envFrom never fails.
func Secret(owner render.Owner, name string, sensitive map[string][]byte) *corev1.Secret {
	var data map[string][]byte
	if len(sensitive) > 0 {
		data = maps.Clone(sensitive)
	}
	return &corev1.Secret{
		ObjectMeta: render.OwnedObjectMeta(owner, name, Labels(owner.Name)),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}
