package render

import (
	"fmt"
	"time"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// HTTPFiles renders the "http" backend of spec. Attributes are written in
// Terraform's schema order: address, update_method, lock_address,
// lock_method, unlock_address, unlock_method, username,
// skip_cert_verification, retry_max, retry_wait_min, retry_wait_max, then
// spec.overrides. Only address is always written; lock_method and
// unlock_method only with their address; skip_cert_verification only when
// true; the others only when set to something other than Terraform's
// default (stateclient.DefaultUpdateMethod and the like): the API server
// fills the defaults in, so a value equal to one says nothing the user
// chose. The password and TLS material are never written: see
// [HTTPCredentials].
//
// It fails with [ErrMissingRequired] when the address is empty, with
// [ErrInvalidOverride] for a bad override (see the package's limits), and
// with [ErrRenderTooLarge] when the files do not fit in a ConfigMap.
func HTTPFiles(spec backendsv1alpha1.HttpBackendSpec) (Files, error) {
	b, err := httpBody(spec)
	if err != nil {
		return Files{}, fmt.Errorf("rendering the http backend: %w", err)
	}
	if err := applyOverrides(b, spec.Overrides); err != nil {
		return Files{}, fmt.Errorf("rendering the http backend: %w", err)
	}
	files, err := renderFiles("http", b, spec.Runner, httpNeeds(spec)...)
	if err != nil {
		return Files{}, fmt.Errorf("rendering the http backend: %w", err)
	}
	return files, nil
}

// httpNeeds returns the features of the runner table that spec needs
// besides its attributes: the mutual TLS variables and state encryption.
func httpNeeds(spec backendsv1alpha1.HttpBackendSpec) []FeatureID {
	needs := encryptionNeeds(spec.Encryption)
	if spec.TLS != nil && spec.TLS.ClientCertificateSecretRef != nil {
		needs = append(needs, FeatureHTTPClientCertificate)
	}
	if spec.TLS != nil && spec.TLS.CACertificate != nil {
		needs = append(needs, FeatureHTTPClientCA)
	}
	return needs
}

// httpBody returns the typed attributes of spec.
func httpBody(spec backendsv1alpha1.HttpBackendSpec) (*body, error) {
	if spec.Address == "" {
		return nil, fmt.Errorf("%w: address", ErrMissingRequired)
	}
	b := &body{}
	b.addString("address", spec.Address)
	addStringUnlessDefault(b, "update_method", spec.UpdateMethod, stateclient.DefaultUpdateMethod)
	if spec.LockAddress != "" {
		b.addString("lock_address", spec.LockAddress)
		addStringUnlessDefault(b, "lock_method", spec.LockMethod, stateclient.DefaultLockMethod)
	}
	if spec.UnlockAddress != "" {
		b.addString("unlock_address", spec.UnlockAddress)
		addStringUnlessDefault(b, "unlock_method", spec.UnlockMethod, stateclient.DefaultUnlockMethod)
	}
	if spec.Username != "" {
		b.addString("username", spec.Username)
	}
	if spec.SkipCertVerification {
		b.addBool("skip_cert_verification", true)
	}
	addIntUnlessDefault(b, "retry_max", spec.RetryMax, stateclient.DefaultRetryMax)
	addIntUnlessDefault(b, "retry_wait_min", spec.RetryWaitMin, defaultRetryWaitMinSeconds)
	addIntUnlessDefault(b, "retry_wait_max", spec.RetryWaitMax, defaultRetryWaitMaxSeconds)
	return b, nil
}

// addStringUnlessDefault adds attribute name when v is neither empty nor
// Terraform's default def.
func addStringUnlessDefault(b *body, name, v, def string) {
	if v != "" && v != def {
		b.addString(name, v)
	}
}

// addIntUnlessDefault adds attribute name when v is set to something other
// than Terraform's default def.
func addIntUnlessDefault(b *body, name string, v *int32, def int32) {
	if v != nil && *v != def {
		b.addInt(name, *v)
	}
}

// Terraform's retry waits in whole seconds, as the API and Terraform count
// them. They are constant conversions, so the compiler checks that each fits
// in an int32.
const (
	defaultRetryWaitMinSeconds = int32(stateclient.DefaultRetryWaitMin / time.Second)
	defaultRetryWaitMaxSeconds = int32(stateclient.DefaultRetryWaitMax / time.Second)
)
