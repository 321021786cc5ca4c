package builders

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SecretWrapper builds a Secret.
type SecretWrapper struct{ obj corev1.Secret }

// MakeSecret starts the Opaque Secret namespace/name, holding nothing.
func MakeSecret(name, namespace string) *SecretWrapper {
	return &SecretWrapper{obj: corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}}
}

// Obj returns the Secret built so far: the wrapper's own, which later
// setters change.
func (w *SecretWrapper) Obj() *corev1.Secret { return &w.obj }

// Data adds data, given as strings, to the Secret's data.
func (w *SecretWrapper) Data(data map[string]string) *SecretWrapper {
	if w.obj.Data == nil {
		w.obj.Data = map[string][]byte{}
	}
	for k, v := range data {
		w.obj.Data[k] = []byte(v)
	}
	return w
}

// TLS makes the Secret a kubernetes.io/tls Secret holding the PEM
// certificate cert and its private key.
func (w *SecretWrapper) TLS(cert, key []byte) *SecretWrapper {
	w.obj.Type = corev1.SecretTypeTLS
	w.obj.Data = map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}
	return w
}

// ConfigMapWrapper builds a ConfigMap.
type ConfigMapWrapper struct{ obj corev1.ConfigMap }

// MakeConfigMap starts the ConfigMap namespace/name, holding nothing.
func MakeConfigMap(name, namespace string) *ConfigMapWrapper {
	return &ConfigMapWrapper{obj: corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}}
}

// Obj returns the ConfigMap built so far: the wrapper's own, which later
// setters change.
func (w *ConfigMapWrapper) Obj() *corev1.ConfigMap { return &w.obj }

// Data adds data to the ConfigMap's data.
func (w *ConfigMapWrapper) Data(data map[string]string) *ConfigMapWrapper {
	if w.obj.Data == nil {
		w.obj.Data = map[string]string{}
	}
	maps.Copy(w.obj.Data, data)
	return w
}
