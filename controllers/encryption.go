package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/budget"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/render"
	"github.com/infrastate/backend-operator/internal/stateencryption"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// DefaultMaxConcurrentDecryptions is the default of
// WithMaxConcurrentDecryptions.
const DefaultMaxConcurrentDecryptions = 4

// decryptionsPerNamespace bounds the encrypted states of one namespace
// held at once: a tenant whose server sends its state slowly holds one
// slot, not every one.
const decryptionsPerNamespace = 1

// decryptions bounds the encrypted states held in memory at once, across
// kinds and per namespace, and keeps the keys derived for them: an
// encrypted state is read whole (see statefile.Decryption), and deriving a
// key costs 600,000 PBKDF2 iterations that an unchanged state need not pay
// again.
type decryptions struct {
	keys *stateencryption.KeyCache

	mu    sync.Mutex
	total int
	inUse int
	held  map[string]int // by namespace; no entry when 0
	// released is closed, and replaced, whenever a slot is released.
	released chan struct{}
}

// derivedKeysKept bounds the derived keys kept: one per state written
// since, per passphrase, which a few hundred encrypted backends fill.
const derivedKeysKept = 256

// newDecryptions admits n encrypted states at once.
func newDecryptions(n int) *decryptions {
	return &decryptions{
		keys:     stateencryption.NewKeyCache(derivedKeysKept),
		total:    max(n, 1),
		held:     map[string]int{},
		released: make(chan struct{}),
	}
}

// acquire waits for a slot of namespace, or for ctx, and returns its
// release, which may be called more than once.
func (d *decryptions) acquire(ctx context.Context, namespace string) (func(), error) {
	for {
		d.mu.Lock()
		if d.inUse < d.total && d.held[namespace] < decryptionsPerNamespace {
			d.inUse++
			d.held[namespace]++
			d.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { d.release(namespace) }) }, nil
		}
		released := d.released
		d.mu.Unlock()
		select {
		case <-released:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for one of the %d decryption slots (--max-concurrent-decryptions): %w", d.total, context.Cause(ctx))
		}
	}
}

// release returns a slot of namespace and wakes the waiters.
func (d *decryptions) release(namespace string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inUse--
	d.held[namespace]--
	if d.held[namespace] <= 0 {
		delete(d.held, namespace)
	}
	close(d.released)
	d.released = make(chan struct{})
}

// stateDecrypter decrypts one object's encrypted states: its backend's
// encryption, within the manager's decryption bounds and namespace's key
// derivation CPU budget. The zero value (no encryption) decrypts nothing.
type stateDecrypter struct {
	encryption  *stateEncryption
	decryptions *decryptions
	// derivations is the key derivation CPU budget the reads' key
	// derivations are charged to, for namespace, the namespace of the
	// object whose read it is; nil charges nothing.
	derivations *budget.Shares
	namespace   string
}

// forRead is how a read within ctx, which bounds the wait for a slot,
// opens an encrypted state; nil (no decryption: only its serial and
// lineage are read) without encryption.
func (s stateDecrypter) forRead(ctx context.Context) *statefile.Decryption {
	if s.encryption == nil {
		return nil
	}
	var opts []stateencryption.KeyringOption
	if s.derivations != nil {
		opts = append(opts, stateencryption.WithMeter(derivationMeter{shares: s.derivations, namespace: s.namespace}))
	}
	return &statefile.Decryption{
		Decrypter: stateencryption.NewKeyring(s.encryption.keys(), s.decryptions.keys, opts...),
		Acquire:   func() (func(), error) { return s.decryptions.acquire(ctx, s.namespace) },
	}
}

// stateEncryption is a backend's spec.encryption with its passphrases
// read: what renders TF_ENCRYPTION and decrypts the state. nil means the
// backend sets no encryption.
type stateEncryption struct {
	secrets render.EncryptionSecrets
}

// resolveEncryption reads the passphrases spec.encryption references. A
// missing Secret or key is a stall as for any reference, a passphrase
// OpenTofu refuses (shorter than 16 bytes, or text OpenTofu would read as
// other bytes: see render.Passphrase.Check) one with reason
// InvalidPassphrase that never quotes it. A problem with one passphrase
// does not hide one with the other (see joinStalls).
func resolveEncryption(ctx context.Context, refs referenceReader, enc *backendsv1alpha1.StateEncryption) (*stateEncryption, error) {
	if enc == nil {
		return nil, nil
	}
	primary, primaryErr := readPassphrase(ctx, refs, enc.PassphraseSecretRef, "spec.encryption.passphraseSecretRef")
	out := &stateEncryption{secrets: render.EncryptionSecrets{Passphrase: primary}}
	var fallbackErr error
	if fb := enc.Fallback; fb != nil {
		if fb.PassphraseSecretRef != nil {
			var previous render.Passphrase
			previous, fallbackErr = readPassphrase(ctx, refs, *fb.PassphraseSecretRef, "spec.encryption.fallback.passphraseSecretRef")
			out.secrets.Fallback = &previous
		}
		out.secrets.FallbackUnencrypted = fb.Unencrypted
	}
	if err := conditions.JoinStalls(primaryErr, fallbackErr); err != nil {
		return nil, err
	}
	return out, nil
}

// readPassphrase reads and checks one passphrase reference.
func readPassphrase(ctx context.Context, refs referenceReader, ref backendsv1alpha1.SecretKeyRef, field string) (render.Passphrase, error) {
	key := render.PassphraseKey(ref.Key)
	value, err := refs.secretKey(ctx, ref.Name, key, field, field+".key")
	if err != nil {
		return render.Passphrase{}, err
	}
	p := render.Passphrase{SecretName: ref.Name, Key: key, Value: value}
	if err := p.Check(field); err != nil {
		return render.Passphrase{}, conditions.Stall(backendsv1alpha1.InvalidPassphraseReason, "%s", invalidPassphraseMessage(refs.namespace, p, field, err))
	}
	return p, nil
}

// invalidPassphraseMessage is the message of a passphrase OpenTofu
// refuses, err being why (see render.Passphrase.Check): it names the
// Secret and key, never the value.
func invalidPassphraseMessage(namespace string, p render.Passphrase, field string, err error) string {
	what := "holds a passphrase OpenTofu refuses"
	switch {
	case errors.Is(err, render.ErrPassphraseTooShort):
		what = fmt.Sprintf("holds a passphrase shorter than the %d bytes OpenTofu requires", render.MinPassphraseBytes)
	case errors.Is(err, render.ErrPassphraseEncoding):
		what = "holds a passphrase that is not UTF-8 text in Unicode normalization form C, which OpenTofu would read as other bytes"
	}
	return fmt.Sprintf("Secret %s/%s key %s referenced by %s %s: put a passphrase of at least %d bytes of plain text in it (openssl rand -base64 32)",
		namespace, p.SecretName, p.Key, field, what, render.MinPassphraseBytes)
}

// inputs are the passphrases, for the fingerprint of what a render, a
// probe or a read depends on.
func (e *stateEncryption) inputs() [][]byte {
	if e == nil {
		return nil
	}
	out := [][]byte{e.secrets.Passphrase.Value, nil, {0}}
	if fb := e.secrets.Fallback; fb != nil {
		out[1] = fb.Value
	}
	if e.secrets.FallbackUnencrypted {
		out[2] = []byte{1}
	}
	return out
}

// addEnv adds TF_ENCRYPTION to the credentials Secret's data.
func (e *stateEncryption) addEnv(credentials map[string][]byte) error {
	if e == nil {
		return nil
	}
	value, err := render.EncryptionEnv(e.secrets)
	if err != nil {
		return err
	}
	credentials[render.EnvEncryption] = value
	return nil
}

// keys are the passphrases as the decrypter takes them: the primary,
// then the previous one, under the names TF_ENCRYPTION gives them.
func (e *stateEncryption) keys() []stateencryption.Key {
	keys := []stateencryption.Key{passphraseKey(e.secrets.Passphrase)}
	if fb := e.secrets.Fallback; fb != nil {
		keys = append(keys, passphraseKey(*fb))
	}
	return keys
}

// passphraseKey is a passphrase under the key provider name TF_ENCRYPTION
// gives it.
func passphraseKey(p render.Passphrase) stateencryption.Key {
	return stateencryption.Key{Provider: p.ProviderName(), Passphrase: p.Value}
}

// encryptionReferences are the Secrets spec.encryption references, as
// related.SecretReference values.
func encryptionReferences(enc *backendsv1alpha1.StateEncryption) []string {
	if enc == nil {
		return nil
	}
	refs := []string{related.SecretReference(enc.PassphraseSecretRef.Name)}
	if fb := enc.Fallback; fb != nil && fb.PassphraseSecretRef != nil {
		refs = append(refs, related.SecretReference(fb.PassphraseSecretRef.Name))
	}
	return refs
}

// unencryptedState is the observation of a plain state that OpenTofu will
// refuse: encryption is configured without fallback.unencrypted, and
// OpenTofu then reads only encrypted state. ok is false otherwise.
func unencryptedState(enc *backendsv1alpha1.StateEncryption, state *backendsv1alpha1.StateSummary) (conditions.Observation, bool) {
	if enc == nil || (enc.Fallback != nil && enc.Fallback.Unencrypted) || state == nil || !state.Present || state.Encrypted {
		return conditions.Observation{}, false
	}
	return conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.StateNotEncryptedReason,
		Message: fmt.Sprintf("The state (serial %d) is not encrypted, and spec.encryption does not accept unencrypted state: "+
			"OpenTofu will refuse to read it. Set spec.encryption.fallback.unencrypted: true until the next apply writes it encrypted",
			state.Serial)}, true
}

// encryptedSuffix marks an encrypted state in a message.
func encryptedSuffix(encrypted bool) string {
	if encrypted {
		return " (encrypted)"
	}
	return ""
}
