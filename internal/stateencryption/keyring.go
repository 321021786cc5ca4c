package stateencryption

import (
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Bounds of what an error quotes from a state's meta, which comes from the
// state server.
const (
	// maxQuoted is the longest name an error quotes, in bytes.
	maxQuoted = 80
	// maxListed is the most meta keys an error lists.
	maxListed = 8
)

// Key is a passphrase and the pbkdf2 key provider it was configured as.
type Key struct {
	// Provider is the name of the pbkdf2 key provider: the operator names
	// it KeyProviderName of the passphrase's Secret reference. A state's
	// parameters for it are under MetaKey(Provider).
	Provider string
	// Passphrase is the key provider's passphrase. The keyring does not
	// modify it, and no error quotes it.
	Passphrase []byte
}

// Keyring decrypts the states OpenTofu encrypted with the aes_gcm method
// keyed by pbkdf2 key providers, as statefile's decrypter. It is safe for
// concurrent use.
type Keyring struct {
	// keys are the configured keys in the order they are tried: the
	// primary, then the fallbacks.
	keys []Key
	// cache keeps derived keys across calls; nil derives every time.
	cache *KeyCache
	// derive derives a key from a passphrase and parameters: deriveKey,
	// or a counting one in tests.
	derive deriveFunc
	// meter admits and is told the cost of each derivation; nil admits
	// every one (see WithMeter).
	meter Meter
	// measure runs a derivation and returns its cost: measureCost, or a
	// fixed one in tests.
	measure func(func()) time.Duration
}

// NewKeyring returns a Keyring that tries keys in order (the primary, then
// each fallback, as OpenTofu tries a state's method and then its
// fallbacks) and derives through cache, which may be nil to derive every
// time. The caller must not modify the passphrases afterwards.
func NewKeyring(keys []Key, cache *KeyCache, opts ...KeyringOption) *Keyring {
	k := &Keyring{keys: slices.Clone(keys), cache: cache, derive: deriveKey, measure: measureCost}
	for _, opt := range opts {
		opt(k)
	}
	return k
}

// Decrypt returns the plain state (a v4 state JSON document) of an
// encrypted state: meta maps each key of the envelope's meta to its value,
// base64-decoded (so a pbkdf2 entry's value is its JSON parameter
// document); payload is encrypted_data, base64-decoded. Every key whose
// provider has parameters in meta is tried in order and the first that
// opens the payload wins. The error wraps ErrNoMatchingKey when no key's
// provider has parameters in meta, ErrInvalidParameters when a payload or
// parameter document is malformed or out of bounds and no key opened the
// payload, and ErrDecryptionFailed when AES-GCM refused the payload under
// every key. When the keyring's Meter refused a derivation and no other
// key opened the payload, the error is that refusal, which wraps
// ErrDerivationRefused: the refused key might have opened it.
func (k *Keyring) Decrypt(meta map[string][]byte, payload []byte) ([]byte, error) {
	var matched []Key
	for _, key := range k.keys {
		if _, ok := meta[MetaKey(key.Provider)]; ok {
			matched = append(matched, key)
		}
	}
	if len(matched) == 0 {
		return nil, k.noMatchingKey(meta)
	}
	if len(payload) < nonceSize+tagSize {
		return nil, fmt.Errorf("%w: the payload has %d bytes, fewer than a nonce and a tag (%d)", ErrInvalidParameters, len(payload), nonceSize+tagSize)
	}
	var (
		failures []string
		refused  error
	)
	invalid := false
	for _, key := range matched {
		plain, err := k.open(key, meta[MetaKey(key.Provider)], payload)
		if err == nil {
			return plain, nil
		}
		if errors.Is(err, ErrDerivationRefused) {
			// A later key may be cached, and open the payload at no cost.
			if refused == nil {
				refused = fmt.Errorf("key provider %q: %w", clip(key.Provider), err)
			}
			continue
		}
		invalid = invalid || errors.Is(err, ErrInvalidParameters)
		failures = append(failures, fmt.Sprintf("key provider %q: %v", clip(key.Provider), err))
	}
	if refused != nil {
		return nil, refused
	}
	sentinel := ErrDecryptionFailed
	if invalid {
		sentinel = ErrInvalidParameters
	}
	return nil, fmt.Errorf("%w: no configured key opens the state: %s", sentinel, strings.Join(failures, "; "))
}

// open decrypts payload with the key of passphrase and the parameter
// document doc. An error for doc wraps ErrInvalidParameters.
func (k *Keyring) open(key Key, doc, payload []byte) ([]byte, error) {
	p, err := parseParams(doc)
	if err != nil {
		return nil, err
	}
	dk, err := k.cache.key(key.Passphrase, p, k.metered())
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(dk)
	if err != nil {
		return nil, fmt.Errorf("creating the AES cipher: %w", err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("creating the AES-GCM cipher: %w", err)
	}
	plain, err := gcm.Open(nil, payload[:nonceSize], payload[nonceSize:], nil)
	if err != nil {
		return nil, fmt.Errorf("opening the payload: %w", err)
	}
	return plain, nil
}

// noMatchingKey returns the ErrNoMatchingKey error for meta: which meta
// keys the state has (sorted, clipped, at most maxListed) and which the
// keyring looked for.
func (k *Keyring) noMatchingKey(meta map[string][]byte) error {
	configured := make([]string, 0, len(k.keys))
	for _, key := range k.keys {
		configured = append(configured, MetaKey(key.Provider))
	}
	return fmt.Errorf("%w: the state's meta has %s; the keyring looks for %s",
		ErrNoMatchingKey, quoteList(slices.Sorted(maps.Keys(meta))), quoteList(configured))
}

// quoteList renders names as a bracketed list of quoted, clipped names,
// at most maxListed of them followed by how many more there are.
func quoteList(names []string) string {
	if len(names) == 0 {
		return "no key"
	}
	quoted := make([]string, 0, min(len(names), maxListed)+1)
	for _, name := range names[:min(len(names), maxListed)] {
		quoted = append(quoted, fmt.Sprintf("%q", clip(name)))
	}
	if more := len(names) - maxListed; more > 0 {
		quoted = append(quoted, fmt.Sprintf("and %d more", more))
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// clip returns s cut to maxQuoted bytes, with an ellipsis when cut, for
// quoting a name that may come from the state server.
func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return s[:maxQuoted] + "..."
}
