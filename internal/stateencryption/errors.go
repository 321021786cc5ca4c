package stateencryption

import "errors"

// Sentinel errors of Keyring.Decrypt. Test for them with errors.Is. The
// errors that wrap them name key providers and meta keys (quoted and
// clipped) but never a passphrase, a derived key or payload bytes.
var (
	// ErrNoMatchingKey is returned when none of the keyring's key
	// providers has parameters in the state's meta: the state was written
	// with another passphrase reference, or with a key provider the
	// operator does not render. Decrypting cannot succeed until the
	// keyring changes.
	ErrNoMatchingKey = errors.New("no configured key provider has parameters in the encrypted state")
	// ErrDecryptionFailed is returned when parameters were found for at
	// least one configured key provider but AES-GCM refused the payload
	// under every derived key: a wrong passphrase, or a tampered state.
	ErrDecryptionFailed = errors.New("decrypting the state failed")
	// ErrInvalidParameters is returned for a malformed meta value or
	// payload, or parameters out of the accepted bounds (see
	// MinIterations, MaxIterations, MaxSaltLength).
	ErrInvalidParameters = errors.New("invalid encryption parameters")
	// ErrDerivationRefused is returned when the keyring's Meter refused
	// to derive a key that no cached key spared, and no other key opened
	// the payload. It says nothing of the passphrases: the state may open
	// once the Meter admits the derivation. The error wraps the Meter's.
	ErrDerivationRefused = errors.New("the key derivation was refused")
)
