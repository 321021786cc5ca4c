package v1alpha1

// StateEncryption configures OpenTofu's client-side state encryption: a
// passphrase turned into a key by the pbkdf2 key provider and the aes_gcm
// method. The operator renders the complete TF_ENCRYPTION value into the
// credentials Secret, so a runner pod with envFrom encrypts with no other
// change; the probe and RemoteState decrypt with the same settings.
// Terraform cannot read encrypted state, and OpenTofu reads it from 1.7.
// +kubebuilder:validation:XValidation:rule="!has(self.fallback) || !has(self.fallback.passphraseSecretRef) || self.fallback.passphraseSecretRef.name != self.passphraseSecretRef.name || (has(self.fallback.passphraseSecretRef.key) ? self.fallback.passphraseSecretRef.key : 'passphrase') != (has(self.passphraseSecretRef.key) ? self.passphraseSecretRef.key : 'passphrase')",message="fallback.passphraseSecretRef must name another Secret key than passphraseSecretRef: it is the previous passphrase",fieldPath=".fallback.passphraseSecretRef"
type StateEncryption struct {
	// passphraseSecretRef selects the passphrase (key "passphrase" when
	// unset), at least 16 bytes, as OpenTofu requires. States and plans
	// are written with it. Changing the Secret re-renders TF_ENCRYPTION;
	// to rotate, point this at the new passphrase and fallback at the old
	// one until every state has been written again.
	// +required
	PassphraseSecretRef SecretKeyRef `json:"passphraseSecretRef"`

	// fallback is what OpenTofu still reads, never writes, while the user
	// migrates: the previous passphrase after a rotation, and unencrypted
	// state when encrypting an existing stack. Remove it once every state
	// has been written again.
	// +optional
	Fallback *EncryptionFallback `json:"fallback,omitempty"`
}

// EncryptionFallback lists what is still read, never written, while
// migrating.
// +kubebuilder:validation:XValidation:rule="has(self.passphraseSecretRef) || (has(self.unencrypted) && self.unencrypted)",message="fallback must set passphraseSecretRef or unencrypted: true"
type EncryptionFallback struct {
	// passphraseSecretRef selects the previous passphrase (key
	// "passphrase" when unset). It must name another Secret key than
	// spec.encryption.passphraseSecretRef: OpenTofu finds a state's key
	// parameters under a name the operator derives from the reference.
	// +optional
	PassphraseSecretRef *SecretKeyRef `json:"passphraseSecretRef,omitempty"`

	// unencrypted accepts state that is not encrypted yet. While it is
	// set, OpenTofu does not enforce encryption.
	// +optional
	Unencrypted bool `json:"unencrypted,omitempty"`
}
