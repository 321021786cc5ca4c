package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Labels of the rendered objects.
const (
	// ManagedByLabel marks the objects the operator owns.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of ManagedByLabel.
	ManagedByValue = "backend-operator"
	// BackendLabel names the backend an object was rendered for; its value
	// is [BackendLabelValue] of the backend's name.
	BackendLabel = "backends.infrastate.io/backend"
)

const (
	configMapSuffix         = "-backend"
	credentialsSecretSuffix = "-backend-credentials" //nolint:gosec // a name suffix, not a credential

	// maxLabelValue is the longest label value Kubernetes accepts.
	maxLabelValue = 63
	// labelHashLen is the number of hex digits of the name's hash that end
	// a shortened label value.
	labelHashLen = 10
)

// Owner identifies the backend object that owns the rendered objects. They
// are created in its namespace.
type Owner struct {
	// APIVersion of the backend, for example backends.infrastate.io/v1alpha1.
	APIVersion string
	// Kind of the backend: HttpBackend or CosBackend.
	Kind string
	// Name of the backend.
	Name string
	// Namespace of the backend and of the rendered objects.
	Namespace string
	// UID of the backend.
	UID types.UID
}

// DefaultConfigMapName returns the name of a backend's ConfigMap when its
// spec.configMapName is unset: "<name>-backend".
func DefaultConfigMapName(backendName string) string {
	return backendName + configMapSuffix
}

// CredentialsSecretName returns the name of a backend's credentials Secret:
// "<name>-backend-credentials".
func CredentialsSecretName(backendName string) string {
	return backendName + credentialsSecretSuffix
}

// BackendLabelValue returns the value of [BackendLabel] for a backend: its
// name, or, for a name longer than the 63 characters a label value can
// hold, the name's first 52 characters, "-" and 10 hex digits of its
// SHA-256, which is still unique in practice.
func BackendLabelValue(backendName string) string {
	if len(backendName) <= maxLabelValue {
		return backendName
	}
	sum := sha256.Sum256([]byte(backendName))
	keep := maxLabelValue - 1 - labelHashLen
	return backendName[:keep] + "-" + hex.EncodeToString(sum[:])[:labelHashLen]
}

// Labels returns the labels of the objects rendered for a backend:
// [ManagedByLabel] and [BackendLabel].
func Labels(backendName string) map[string]string {
	return map[string]string{
		ManagedByLabel: ManagedByValue,
		BackendLabel:   BackendLabelValue(backendName),
	}
}

// ConfigMap returns the ConfigMap name, in the owner's namespace, holding
// files ([Files.Data]), labelled with [Labels] and controlled by owner.
func ConfigMap(owner Owner, name string, files Files) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: objectMeta(owner, name),
		Data:       files.Data(),
	}
}

// CredentialsSecret returns the Opaque Secret name, in the owner's
// namespace, holding data (a copy; nil when data is empty), labelled with
// [Labels] and controlled by owner. Create it even when data is empty, so
// that a runner pod's envFrom never fails.
func CredentialsSecret(owner Owner, name string, data map[string][]byte) *corev1.Secret {
	var copied map[string][]byte
	if len(data) > 0 {
		copied = make(map[string][]byte, len(data))
		for k, v := range data {
			copied[k] = bytes.Clone(v)
		}
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: objectMeta(owner, name),
		Type:       corev1.SecretTypeOpaque,
		Data:       copied,
	}
}

// objectMeta returns the metadata of an object rendered for owner.
func objectMeta(owner Owner, name string) metav1.ObjectMeta {
	return OwnedObjectMeta(owner, name, Labels(owner.Name))
}

// OwnedObjectMeta returns the metadata of an object named name, in the
// owner's namespace, with labels and a controller reference to owner, so
// that deleting the owner deletes it.
func OwnedObjectMeta(owner Owner, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: owner.Namespace,
		Labels:    labels,
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion:         owner.APIVersion,
			Kind:               owner.Kind,
			Name:               owner.Name,
			UID:                owner.UID,
			Controller:         new(true),
			BlockOwnerDeletion: new(true),
		}},
	}
}
