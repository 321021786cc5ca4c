package builders

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// HttpBackendWrapper builds an HttpBackend.
type HttpBackendWrapper struct{ obj backendsv1alpha1.HttpBackend }

// MakeHttpBackend starts the HttpBackend namespace/name of the state at
// address, with nothing else set: no locking, no credentials, the API's
// defaults.
func MakeHttpBackend(name, namespace, address string) *HttpBackendWrapper {
	return &HttpBackendWrapper{obj: backendsv1alpha1.HttpBackend{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       backendsv1alpha1.HttpBackendSpec{Address: address},
	}}
}

// Obj returns the HttpBackend built so far: the wrapper's own, which
// later setters change.
func (w *HttpBackendWrapper) Obj() *backendsv1alpha1.HttpBackend { return &w.obj }

// Generation sets metadata.generation.
func (w *HttpBackendWrapper) Generation(g int64) *HttpBackendWrapper {
	w.obj.Generation = g
	return w
}

// UID sets metadata.uid.
func (w *HttpBackendWrapper) UID(uid types.UID) *HttpBackendWrapper {
	w.obj.UID = uid
	return w
}

// Finalizers sets metadata.finalizers.
func (w *HttpBackendWrapper) Finalizers(finalizers ...string) *HttpBackendWrapper {
	w.obj.Finalizers = finalizers
	return w
}

// Deleted sets metadata.deletionTimestamp: the HttpBackend is being
// deleted since at.
func (w *HttpBackendWrapper) Deleted(at time.Time) *HttpBackendWrapper {
	w.obj.DeletionTimestamp = new(metav1.NewTime(at))
	return w
}

// Locks enables locking at the state's own address: spec.lockAddress and
// spec.unlockAddress are spec.address.
func (w *HttpBackendWrapper) Locks() *HttpBackendWrapper {
	return w.LockAddresses(w.obj.Spec.Address, w.obj.Spec.Address)
}

// LockAddresses sets spec.lockAddress and spec.unlockAddress.
func (w *HttpBackendWrapper) LockAddresses(lock, unlock string) *HttpBackendWrapper {
	w.obj.Spec.LockAddress, w.obj.Spec.UnlockAddress = lock, unlock
	return w
}

// BasicAuth sets spec.username to user and spec.passwordSecretRef to key
// of the Secret secret; an empty key is the API's default.
func (w *HttpBackendWrapper) BasicAuth(user, secret, key string) *HttpBackendWrapper {
	w.obj.Spec.Username = user
	w.obj.Spec.PasswordSecretRef = &backendsv1alpha1.SecretKeyRef{Name: secret, Key: key}
	return w
}

// ClientCertificate sets spec.tls.clientCertificateSecretRef to the
// kubernetes.io/tls Secret secret.
func (w *HttpBackendWrapper) ClientCertificate(secret string) *HttpBackendWrapper {
	w.tls().ClientCertificateSecretRef = &backendsv1alpha1.LocalSecretRef{Name: secret}
	return w
}

// CAFromConfigMap sets spec.tls.caCertificate to the ConfigMap name, at
// the API's default key.
func (w *HttpBackendWrapper) CAFromConfigMap(name string) *HttpBackendWrapper {
	w.tls().CACertificate = &backendsv1alpha1.CACertificateSource{ConfigMapRef: &backendsv1alpha1.LocalConfigMapRef{Name: name}}
	return w
}

// CAFromSecret sets spec.tls.caCertificate to key of the Secret name; an
// empty key is the API's default.
func (w *HttpBackendWrapper) CAFromSecret(name, key string) *HttpBackendWrapper {
	w.tls().CACertificate = &backendsv1alpha1.CACertificateSource{SecretRef: &backendsv1alpha1.LocalSecretRef{Name: name}, Key: key}
	return w
}

// tls is spec.tls, set to an empty one if it was not.
func (w *HttpBackendWrapper) tls() *backendsv1alpha1.HttpBackendTLS {
	if w.obj.Spec.TLS == nil {
		w.obj.Spec.TLS = &backendsv1alpha1.HttpBackendTLS{}
	}
	return w.obj.Spec.TLS
}

// RetryMax sets spec.retryMax.
func (w *HttpBackendWrapper) RetryMax(retryMax int32) *HttpBackendWrapper {
	w.obj.Spec.RetryMax = &retryMax
	return w
}

// Retries sets spec.retryMax, spec.retryWaitMin and spec.retryWaitMax
// (in seconds).
func (w *HttpBackendWrapper) Retries(retryMax, waitMin, waitMax int32) *HttpBackendWrapper {
	w.obj.Spec.RetryWaitMin, w.obj.Spec.RetryWaitMax = &waitMin, &waitMax
	return w.RetryMax(retryMax)
}

// LockCheck sets spec.probe.lockCheck: the probe takes and releases the
// lock to learn its holder.
func (w *HttpBackendWrapper) LockCheck() *HttpBackendWrapper {
	w.probe().LockCheck = true
	return w
}

// ProbeInterval sets spec.probe.interval; 0 disables probing.
func (w *HttpBackendWrapper) ProbeInterval(d time.Duration) *HttpBackendWrapper {
	w.probe().Interval = duration(d)
	return w
}

// probe is spec.probe, set to an empty one if it was not.
func (w *HttpBackendWrapper) probe() *backendsv1alpha1.HttpProbeSpec {
	if w.obj.Spec.Probe == nil {
		w.obj.Spec.Probe = &backendsv1alpha1.HttpProbeSpec{}
	}
	return w.obj.Spec.Probe
}

// ForceUnlock sets spec.forceUnlock.lockID.
func (w *HttpBackendWrapper) ForceUnlock(lockID string) *HttpBackendWrapper {
	w.obj.Spec.ForceUnlock = &backendsv1alpha1.ForceUnlockSpec{LockID: lockID}
	return w
}

// LockPolicy sets spec.lockPolicy.
func (w *HttpBackendWrapper) LockPolicy(policy backendsv1alpha1.LockPolicy) *HttpBackendWrapper {
	w.obj.Spec.LockPolicy = &policy
	return w
}

// ConfigMapName sets spec.configMapName, the name of the rendered
// ConfigMap.
func (w *HttpBackendWrapper) ConfigMapName(name string) *HttpBackendWrapper {
	w.obj.Spec.ConfigMapName = name
	return w
}

// Runner sets spec.runner; an empty version is the API's default.
func (w *HttpBackendWrapper) Runner(flavor backendsv1alpha1.RunnerFlavor, version string) *HttpBackendWrapper {
	w.obj.Spec.Runner = runner(flavor, version)
	return w
}

// Encryption sets spec.encryption.passphraseSecretRef to the Secret
// secret, at the API's default key.
func (w *HttpBackendWrapper) Encryption(secret string) *HttpBackendWrapper {
	encryption(&w.obj.Spec.BackendCommonSpec, secret)
	return w
}

// EncryptionFallback sets spec.encryption.fallback.
func (w *HttpBackendWrapper) EncryptionFallback(fallback backendsv1alpha1.EncryptionFallback) *HttpBackendWrapper {
	encryptionFallback(&w.obj.Spec.BackendCommonSpec, fallback)
	return w
}

// Overrides sets spec.overrides.
func (w *HttpBackendWrapper) Overrides(overrides ...backendsv1alpha1.Override) *HttpBackendWrapper {
	w.obj.Spec.Overrides = overrides
	return w
}

// ObservedGeneration sets status.observedGeneration: -1 is what the API
// server stores for a new HttpBackend.
func (w *HttpBackendWrapper) ObservedGeneration(g int64) *HttpBackendWrapper {
	w.obj.Status.ObservedGeneration = g
	return w
}

// Condition adds c to status.conditions.
func (w *HttpBackendWrapper) Condition(c metav1.Condition) *HttpBackendWrapper {
	w.obj.Status.Conditions = append(w.obj.Status.Conditions, c)
	return w
}
