package controllers

import (
	"errors"
	"fmt"
	"strings"

	"github.com/infrastate/backend-operator/internal/render"
	"github.com/infrastate/backend-operator/internal/stateencryption"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// decryptError is an encrypted state that no passphrase of spec.encryption
// opens, with the passphrases tried, by Secret reference: the message of
// DecryptionFailed names them (see decryptionNextStep).
type decryptError struct {
	err error
	// tried describe the passphrases tried, by Secret reference, never
	// by value.
	tried []string
}

func (e *decryptError) Error() string { return e.err.Error() }
func (e *decryptError) Unwrap() error { return e.err }

// explain returns err, when it is a state that could not be decrypted
// (statefile.ErrDecrypt), as a *decryptError naming the passphrases
// tried, or, when a key derivation was refused by the key derivation CPU
// budget, as a *derivationRefusedError, which no longer reads as a failed
// decryption; any other err as it is.
func (s stateDecrypter) explain(err error) error {
	if err == nil || s.encryption == nil {
		return err
	}
	if refused := derivationRefusal(err); refused != nil {
		return refused
	}
	if !errors.Is(err, statefile.ErrDecrypt) {
		return err
	}
	return &decryptError{err: err, tried: s.encryption.tried(s.namespace)}
}

// tried describes the passphrases a decryption tries, in the keyring's
// order, by Secret reference.
func (e *stateEncryption) tried(namespace string) []string {
	out := []string{passphraseReference(namespace, e.secrets.Passphrase, "spec.encryption.passphraseSecretRef")}
	if fb := e.secrets.Fallback; fb != nil {
		out = append(out, passphraseReference(namespace, *fb, "spec.encryption.fallback.passphraseSecretRef"))
	}
	return out
}

// passphraseReference names a passphrase by its Secret, key and field.
func passphraseReference(namespace string, p render.Passphrase, field string) string {
	return fmt.Sprintf("Secret %s/%s key %s (%s)", namespace, p.SecretName, render.PassphraseKey(p.Key), field)
}

// decryptionNextStep is what the message of DecryptionFailed says after
// the error: which passphrases were tried, why none may have opened the
// state, and what to do.
func decryptionNextStep(err error) string {
	tried := "the passphrases of the backend's spec.encryption"
	if de, ok := errors.AsType[*decryptError](err); ok && len(de.tried) > 0 {
		tried = strings.Join(de.tried, " and ")
	}
	switch {
	case errors.Is(err, stateencryption.ErrNoMatchingKey):
		return fmt.Sprintf("The passphrases tried were %s, and the state names none of them: "+
			"a state names the passphrase it was written with by Secret name and key, so it was written with another one. "+
			"Put that Secret reference in spec.encryption.fallback.passphraseSecretRef", tried)
	case errors.Is(err, stateencryption.ErrInvalidParameters):
		return fmt.Sprintf("The passphrases tried were %s, but the state's key parameters are malformed or beyond the operator's bounds "+
			"(%d to %d PBKDF2 iterations, a salt of at most %d bytes): check which runner wrote it; OpenTofu's own parameters are within them",
			tried, stateencryption.MinIterations, stateencryption.MaxIterations, stateencryption.MaxSaltLength)
	}
	return fmt.Sprintf("The passphrases tried were %s: the state may have been written with another passphrase "+
		"(changing the passphrase in a Secret key is not a rotation), or altered. "+
		"Put the passphrase it was written with in spec.encryption.fallback.passphraseSecretRef, under the Secret name and key it was written with", tried)
}
