package builders

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// CosBackendWrapper builds a CosBackend.
type CosBackendWrapper struct{ obj backendsv1alpha1.CosBackend }

// MakeCosBackend starts the CosBackend namespace/name of bucket, with
// nothing else set: no region, no prefix, no credentials.
func MakeCosBackend(name, namespace, bucket string) *CosBackendWrapper {
	return &CosBackendWrapper{obj: backendsv1alpha1.CosBackend{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       backendsv1alpha1.CosBackendSpec{Bucket: bucket},
	}}
}

// Obj returns the CosBackend built so far: the wrapper's own, which later
// setters change.
func (w *CosBackendWrapper) Obj() *backendsv1alpha1.CosBackend { return &w.obj }

// Generation sets metadata.generation.
func (w *CosBackendWrapper) Generation(g int64) *CosBackendWrapper {
	w.obj.Generation = g
	return w
}

// Region sets spec.region; an empty one leaves it to the manager's
// default.
func (w *CosBackendWrapper) Region(region string) *CosBackendWrapper {
	w.obj.Spec.Region = region
	return w
}

// Prefix sets spec.prefix.
func (w *CosBackendWrapper) Prefix(prefix string) *CosBackendWrapper {
	w.obj.Spec.Prefix = prefix
	return w
}

// Encrypt sets spec.encrypt.
func (w *CosBackendWrapper) Encrypt(encrypt bool) *CosBackendWrapper {
	w.obj.Spec.Encrypt = &encrypt
	return w
}

// Credentials sets spec.credentialsSecretRef to the Secret secret; an
// empty name removes the reference.
func (w *CosBackendWrapper) Credentials(secret string) *CosBackendWrapper {
	w.obj.Spec.CredentialsSecretRef = nil
	if secret != "" {
		w.obj.Spec.CredentialsSecretRef = &backendsv1alpha1.LocalSecretRef{Name: secret}
	}
	return w
}

// AssumeRole sets spec.assumeRole to the role roleArn, with the session
// sessionName.
func (w *CosBackendWrapper) AssumeRole(roleArn, sessionName string) *CosBackendWrapper {
	w.obj.Spec.AssumeRole = &backendsv1alpha1.AssumeRole{RoleArn: roleArn, SessionName: sessionName}
	return w
}

// ProbeInterval sets spec.probe.interval; 0 disables probing.
func (w *CosBackendWrapper) ProbeInterval(d time.Duration) *CosBackendWrapper {
	w.obj.Spec.Probe = &backendsv1alpha1.ProbeSpec{Interval: duration(d)}
	return w
}

// ForceUnlock sets spec.forceUnlock.lockID.
func (w *CosBackendWrapper) ForceUnlock(lockID string) *CosBackendWrapper {
	w.obj.Spec.ForceUnlock = &backendsv1alpha1.ForceUnlockSpec{LockID: lockID}
	return w
}

// LockPolicy sets spec.lockPolicy.
func (w *CosBackendWrapper) LockPolicy(policy backendsv1alpha1.LockPolicy) *CosBackendWrapper {
	w.obj.Spec.LockPolicy = &policy
	return w
}

// Encryption sets spec.encryption.passphraseSecretRef to the Secret
// secret, at the API's default key.
func (w *CosBackendWrapper) Encryption(secret string) *CosBackendWrapper {
	encryption(&w.obj.Spec.BackendCommonSpec, secret)
	return w
}

// EncryptionFallback sets spec.encryption.fallback.
func (w *CosBackendWrapper) EncryptionFallback(fallback backendsv1alpha1.EncryptionFallback) *CosBackendWrapper {
	encryptionFallback(&w.obj.Spec.BackendCommonSpec, fallback)
	return w
}

// Overrides sets spec.overrides.
func (w *CosBackendWrapper) Overrides(overrides ...backendsv1alpha1.Override) *CosBackendWrapper {
	w.obj.Spec.Overrides = overrides
	return w
}

// ObservedGeneration sets status.observedGeneration: -1 is what the API
// server stores for a new CosBackend.
func (w *CosBackendWrapper) ObservedGeneration(g int64) *CosBackendWrapper {
	w.obj.Status.ObservedGeneration = g
	return w
}
