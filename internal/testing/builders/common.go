package builders

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// duration is d as an API duration.
func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// runner is the spec.runner of flavor and version.
func runner(flavor backendsv1alpha1.RunnerFlavor, version string) *backendsv1alpha1.Runner {
	return &backendsv1alpha1.Runner{Flavor: flavor, Version: version}
}

// encryption sets the passphrase Secret of c's spec.encryption, keeping
// its fallback.
func encryption(c *backendsv1alpha1.BackendCommonSpec, secret string) {
	if c.Encryption == nil {
		c.Encryption = &backendsv1alpha1.StateEncryption{}
	}
	c.Encryption.PassphraseSecretRef = backendsv1alpha1.SecretKeyRef{Name: secret}
}

// encryptionFallback sets the fallback of c's spec.encryption.
func encryptionFallback(c *backendsv1alpha1.BackendCommonSpec, fallback backendsv1alpha1.EncryptionFallback) {
	if c.Encryption == nil {
		c.Encryption = &backendsv1alpha1.StateEncryption{}
	}
	c.Encryption.Fallback = &fallback
}
