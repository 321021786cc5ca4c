package render

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateencryption"
)

// EnvEncryption is OpenTofu's state encryption configuration: the body of
// a terraform.encryption block, in HCL. The credentials Secret carries it
// when spec.encryption is set; see [EncryptionEnv].
const EnvEncryption = "TF_ENCRYPTION"

// MinPassphraseBytes is the shortest passphrase OpenTofu's pbkdf2 key
// provider accepts, in bytes.
const MinPassphraseBytes = 16

// migrationMethod is the name of the unencrypted method that a fallback to
// unencrypted state renders.
const migrationMethod = "migration"

// Errors returned, wrapped, by [EncryptionEnv]. They describe Secrets or a
// spec the user must fix; their messages name the Secret and key, never
// the passphrase.
var (
	// ErrPassphraseTooShort is returned for a passphrase shorter than
	// [MinPassphraseBytes], which OpenTofu refuses.
	ErrPassphraseTooShort = errors.New("the passphrase is shorter than the 16 bytes OpenTofu requires")
	// ErrPassphraseEncoding is returned for a passphrase that is not UTF-8
	// in Unicode normalization form C. OpenTofu reads TF_ENCRYPTION as
	// HCL, whose strings are UTF-8 normalized to NFC: it would derive its
	// key from other bytes than the Secret holds, and the operator, which
	// decrypts with the Secret's bytes, could not read the states.
	ErrPassphraseEncoding = errors.New("the passphrase is not UTF-8 text in Unicode normalization form C")
	// ErrPassphraseReused is returned when the fallback passphrase is the
	// same Secret key as the passphrase: both would render one key
	// provider name (see [stateencryption.KeyProviderName]).
	ErrPassphraseReused = errors.New("the fallback passphrase is the same Secret key as the passphrase")
)

// Passphrase is a passphrase of spec.encryption, resolved from its Secret
// reference.
type Passphrase struct {
	// SecretName is the name of the Secret holding it.
	SecretName string
	// Key is its key in the Secret; empty means
	// [backendsv1alpha1.DefaultPassphraseKey].
	Key string
	// Value is the passphrase: at least [MinPassphraseBytes] of UTF-8 in
	// normalization form C.
	Value []byte
}

// PassphraseKey is the key of a passphrase in its Secret, as a Secret
// reference of spec.encryption gives it (key), defaulted as the API
// defaults it: empty means [backendsv1alpha1.DefaultPassphraseKey].
func PassphraseKey(key string) string {
	if key == "" {
		return backendsv1alpha1.DefaultPassphraseKey
	}
	return key
}

// key is p's key in its Secret, defaulted (see [PassphraseKey]).
func (p Passphrase) key() string {
	return PassphraseKey(p.Key)
}

// ProviderName is the name of p's pbkdf2 key provider and aes_gcm method
// in TF_ENCRYPTION, and so the name OpenTofu records a state's key
// parameters under (see stateencryption.MetaKey): whoever decrypts a state
// looks it up by this name.
func (p Passphrase) ProviderName() string {
	return stateencryption.KeyProviderName(p.SecretName, p.key())
}

// Check fails when OpenTofu cannot use p as it is (see EncryptionEnv's
// errors), naming what of the spec holds p (role) and its Secret
// reference, never its value or its length.
func (p Passphrase) Check(role string) error {
	ref := fmt.Sprintf("%s (Secret %q, key %q)", role, p.SecretName, p.key())
	switch {
	case p.SecretName == "":
		return fmt.Errorf("%w: the Secret name of %s", ErrMissingRequired, role)
	case len(p.Value) < MinPassphraseBytes:
		return fmt.Errorf("%w: %s", ErrPassphraseTooShort, ref)
	case !utf8.Valid(p.Value):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrPassphraseEncoding, ref)
	case cty.StringVal(string(p.Value)).AsString() != string(p.Value):
		// cty normalizes strings to NFC, as OpenTofu's HCL parser does.
		return fmt.Errorf("%w: %s is not in normalization form C", ErrPassphraseEncoding, ref)
	}
	return nil
}

// EncryptionSecrets is spec.encryption with its passphrases resolved from
// their Secrets.
type EncryptionSecrets struct {
	// Passphrase encrypts, and decrypts, states and plans.
	Passphrase Passphrase
	// Fallback is the previous passphrase, which OpenTofu still decrypts
	// with; nil when there is none.
	Fallback *Passphrase
	// FallbackUnencrypted accepts states and plans not encrypted yet.
	FallbackUnencrypted bool
}

// EncryptionEnv returns the value of TF_ENCRYPTION ([EnvEncryption]) for
// e: a pbkdf2 key provider and an aes_gcm method for each passphrase, named
// by [stateencryption.KeyProviderName] after its Secret reference; an
// unencrypted method named "migration" when FallbackUnencrypted; and state
// and plan blocks that encrypt with the passphrase and fall back to the
// previous passphrase, then to unencrypted data. They are enforced (OpenTofu
// refuses to write unencrypted data) unless unencrypted data is accepted,
// which OpenTofu does not allow together. The passphrases are HCL string
// literals, escaped so that OpenTofu reads each as it is. The output is
// deterministic.
//
// It fails with [ErrMissingRequired] for a passphrase without a Secret
// name, [ErrPassphraseTooShort], [ErrPassphraseEncoding] and
// [ErrPassphraseReused]; no error holds a passphrase.
func EncryptionEnv(e EncryptionSecrets) ([]byte, error) {
	if err := e.Passphrase.Check("the passphrase"); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", EnvEncryption, err)
	}
	if e.Fallback != nil {
		if err := e.Fallback.Check("the fallback passphrase"); err != nil {
			return nil, fmt.Errorf("rendering %s: %w", EnvEncryption, err)
		}
		if e.Fallback.SecretName == e.Passphrase.SecretName && e.Fallback.key() == e.Passphrase.key() {
			return nil, fmt.Errorf("rendering %s: %w: Secret %q, key %q", EnvEncryption, ErrPassphraseReused, e.Passphrase.SecretName, e.Passphrase.key())
		}
	}
	return writeEncryption(e), nil
}

// writeEncryption writes TF_ENCRYPTION for e, which EncryptionEnv has
// checked.
func writeEncryption(e EncryptionSecrets) []byte {
	passphrases := []Passphrase{e.Passphrase}
	if e.Fallback != nil {
		passphrases = append(passphrases, *e.Fallback)
	}
	f := hclwrite.NewEmptyFile()
	root := f.Body()
	var chain []hcl.Traversal // the methods, primary first
	for _, p := range passphrases {
		name := p.ProviderName()
		kp := appendBlock(root, "key_provider", "pbkdf2", name)
		kp.SetAttributeValue("passphrase", cty.StringVal(string(p.Value)))
		m := appendBlock(root, "method", "aes_gcm", name)
		m.SetAttributeTraversal("keys", reference("key_provider", "pbkdf2", name))
		chain = append(chain, reference("method", "aes_gcm", name))
	}
	if e.FallbackUnencrypted {
		appendBlock(root, "method", "unencrypted", migrationMethod)
		chain = append(chain, reference("method", "unencrypted", migrationMethod))
	}
	for _, target := range []string{"state", "plan"} {
		b := appendBlock(root, target)
		b.SetAttributeTraversal("method", chain[0])
		if !e.FallbackUnencrypted {
			b.SetAttributeValue("enforced", cty.True)
		}
		for _, m := range chain[1:] {
			b = b.AppendNewBlock("fallback", nil).Body()
			b.SetAttributeTraversal("method", m)
		}
	}
	return f.Bytes()
}

// appendBlock appends a block of type typ with labels to b, after an empty
// line unless it is the first, and returns its body.
func appendBlock(b *hclwrite.Body, typ string, labels ...string) *hclwrite.Body {
	if len(b.Blocks()) > 0 {
		b.AppendNewline()
	}
	return b.AppendNewBlock(typ, labels).Body()
}

// reference is the traversal root.attrs..., such as
// method.aes_gcm.<name>.
func reference(root string, attrs ...string) hcl.Traversal {
	t := hcl.Traversal{hcl.TraverseRoot{Name: root}}
	for _, a := range attrs {
		t = append(t, hcl.TraverseAttr{Name: a})
	}
	return t
}

// encryptionNeeds returns the features of the runner table that
// spec.encryption (enc) needs.
func encryptionNeeds(enc *backendsv1alpha1.StateEncryption) []FeatureID {
	if enc == nil {
		return nil
	}
	return []FeatureID{FeatureStateEncryption}
}
