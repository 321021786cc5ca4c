package statefile

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
)

// OpenTofu's state encryption writes a state as an envelope: the serial
// and the lineage in clear text, a meta object holding each key provider's
// parameters (base64), the encrypted plain state in encrypted_data
// (base64) and encryption_version "v0". A document with a non-empty
// encryption_version is an envelope, as OpenTofu decides.

// Bounds of an envelope's parts besides its payload: OpenTofu writes one
// meta entry per key provider, each a short JSON document.
const (
	maxMetaEntries    = 16
	maxMetaKeyBytes   = 256
	maxMetaValueBytes = 4 << 10
	// DefaultMaxEncryptedBytes bounds encrypted_data as written (base64)
	// when Decryption.MaxBytes is 0. Decrypting needs the whole payload,
	// so an encrypted state costs about three times this while it is
	// read, unlike a plain state, which is streamed.
	DefaultMaxEncryptedBytes = 16 << 20
)

// supportedEncryptionVersion is the only envelope version OpenTofu writes.
const supportedEncryptionVersion = "v0"

// ErrEncrypted is returned when outputs are read from an encrypted state
// without a Decryption: they are not in clear text.
var ErrEncrypted = errors.New("the state is encrypted")

// ErrDecrypt is wrapped, with the Decrypter's error, by the error for an
// encrypted state the Decrypter cannot open.
var ErrDecrypt = errors.New("cannot decrypt the state")

// ErrEncryptedTooLarge is wrapped by the error for an encrypted state whose
// payload exceeds Decryption.MaxBytes.
var ErrEncryptedTooLarge = errors.New("the encrypted state is too large to decrypt")

// Decrypter opens the payload of an encrypted state.
type Decrypter interface {
	// Decrypt returns the plain state (a state document) of an encrypted
	// one: meta maps each key of the envelope's meta to its value,
	// base64-decoded; payload is encrypted_data, base64-decoded. Its
	// errors may name meta keys, clipped, but never quote a meta value,
	// the payload or the plain state.
	Decrypt(meta map[string][]byte, payload []byte) ([]byte, error)
}

// Decryption says how encrypted states are read. Without one, an
// encrypted state's summary has Encrypted set and only its serial and
// lineage, and its outputs cannot be read (ErrEncrypted).
type Decryption struct {
	// Decrypter opens the payload.
	Decrypter Decrypter
	// MaxBytes bounds encrypted_data as written (base64); 0 means
	// DefaultMaxEncryptedBytes.
	MaxBytes int64
	// Acquire, when set, is called before the payload is read whole, and
	// the release it returns once the plain state has been read: it
	// bounds how many encrypted states are held in memory at once. An
	// error stops the read.
	Acquire func() (release func(), err error)
}

// maxBytes is MaxBytes with its default.
func (d *Decryption) maxBytes() int64 {
	if d.MaxBytes > 0 {
		return d.MaxBytes
	}
	return DefaultMaxEncryptedBytes
}

// envelope is what a document holds of an encrypted state, as read.
type envelope struct {
	version string
	meta    map[string][]byte
	payload string // encrypted_data as written (base64), when kept
	kept    bool   // payload was read (a Decryption was given)
	release func()
}

// readMeta reads the meta object: at most maxMetaEntries keys of at most
// maxMetaKeyBytes with string values of at most maxMetaValueBytes, each
// base64-decoded.
func (s *scanner) readMeta(env *envelope) error {
	env.meta = map[string][]byte{}
	return s.object(func(key string) error {
		if len(env.meta) == maxMetaEntries {
			return fmt.Errorf("meta has more than %d entries: not an OpenTofu state", maxMetaEntries)
		}
		if len(key) > maxMetaKeyBytes {
			return fmt.Errorf("a meta key is longer than %d bytes: not an OpenTofu state", maxMetaKeyBytes)
		}
		var v string
		if err := s.readBoundedString("meta value", maxMetaValueBytes, &v); err != nil {
			return err
		}
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return fmt.Errorf("%w: a meta value is not base64", ErrMalformed)
		}
		env.meta[key] = raw
		return nil
	})
}

// readPayload reads encrypted_data whole, within dec's bound, after
// dec.Acquire.
func (s *scanner) readPayload(env *envelope, dec *Decryption) error {
	if env.release == nil && dec.Acquire != nil {
		release, err := dec.Acquire()
		if err != nil {
			return fmt.Errorf("reading the encrypted state: %w", err)
		}
		env.release = release
	}
	limit := dec.maxBytes()
	var v string
	err := s.readBoundedString("encrypted_data", maxInt(limit), &v)
	if errors.Is(err, errValueTooLong) {
		return fmt.Errorf("%w: encrypted_data is larger than %d KiB", ErrEncryptedTooLarge, limit>>10)
	}
	if err != nil {
		return err
	}
	env.payload, env.kept = v, true
	return nil
}

// open decrypts a kept payload and reads the plain state from it with
// visit. The plain state must not be an envelope itself.
func (env *envelope) open(dec *Decryption, visit outputVisitor) (metadata, error) {
	payload, err := base64.StdEncoding.DecodeString(env.payload)
	if err != nil {
		return metadata{}, fmt.Errorf("%w: encrypted_data is not base64", ErrMalformed)
	}
	env.payload = "" // the decoded copy is all that is needed now
	plain, err := dec.Decrypter.Decrypt(env.meta, payload)
	if err != nil {
		return metadata{}, fmt.Errorf("%w: %w", ErrDecrypt, err)
	}
	md, err := readDocument(bytes.NewReader(plain), visit, nil)
	if err != nil {
		return metadata{}, fmt.Errorf("the decrypted state: %w", err)
	}
	if md.encrypted {
		return metadata{}, fmt.Errorf("%w: the decrypted state is encrypted again", ErrMalformed)
	}
	md.encrypted = true
	return md, nil
}

// checkEnvelope accepts only the envelope version OpenTofu writes. The
// version is not quoted: it is input.
func checkEnvelope(version string) error {
	if version != supportedEncryptionVersion {
		return fmt.Errorf("%w: the state is encrypted with an encryption version other than %s", ErrUnsupportedVersion, supportedEncryptionVersion)
	}
	return nil
}
