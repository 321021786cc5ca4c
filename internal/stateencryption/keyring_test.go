package stateencryption

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/statefile"
)

// Passphrases and key providers of the unit tests. The passphrases are at
// least 16 characters, OpenTofu's minimum.
const (
	passCurrent = "correct horse battery staple"
	passOld     = "an older passphrase, rotated out"
	passWrong   = "a wrong passphrase of some length"
)

var (
	providerCurrent = KeyProviderName("tofu-passphrase", "passphrase")
	providerOld     = KeyProviderName("tofu-passphrase-old", "passphrase")
)

// plainState is the plain state the unit tests encrypt.
var plainState = []byte(`{"version":4,"terraform_version":"1.12.6","serial":3,"lineage":"l","outputs":{"x":{"value":"y","type":"string"}},"resources":[]}`)

func TestKeyringDecrypt(t *testing.T) {
	current := encrypt(t, plainState, passCurrent, fastParams())
	old := encrypt(t, plainState, passOld, fastParams())
	other := encrypt(t, plainState, passWrong, fastParams())
	defaults := encrypt(t, plainState, passCurrent, tofuDefaults())

	// bounds returns a parameter document of fastParams changed by edit.
	bounds := func(edit func(*tofuMetadata)) []byte {
		m := fastParams()
		edit(&m)
		return paramsDoc(t, m)
	}
	// edge encrypts plainState with fastParams changed by edit: parameters
	// at the edge of the bounds, which must open.
	edge := func(edit func(*tofuMetadata)) encrypted {
		m := fastParams()
		edit(&m)
		return encrypt(t, plainState, passCurrent, m)
	}
	tampered := func(payload []byte, i int) []byte {
		out := append([]byte(nil), payload...)
		out[i] ^= 0x01
		return out
	}
	keyCurrent := Key{Provider: providerCurrent, Passphrase: []byte(passCurrent)}
	keyOld := Key{Provider: providerOld, Passphrase: []byte(passOld)}
	keyWrong := Key{Provider: providerCurrent, Passphrase: []byte(passWrong)}
	minSalt, maxSalt, key24 := edge(func(m *tofuMetadata) { m.Salt = randomBytes(1) }),
		edge(func(m *tofuMetadata) { m.Salt = randomBytes(MaxSaltLength) }),
		edge(func(m *tofuMetadata) { m.KeyLength = 24 })

	cases := map[string]struct {
		keys    []Key
		meta    map[string][]byte
		payload []byte
		// wantErr is the sentinel the error must match; nil for success,
		// which must return plainState.
		wantErr error
		// wantInMessage are strings the error message must contain.
		wantInMessage []string
		// secrets are derived keys the error message must not quote.
		secrets [][]byte
	}{
		"right key": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): current.doc},
			payload: current.payload,
		},
		"OpenTofu's default parameters": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): defaults.doc},
			payload: defaults.payload,
		},
		"other meta keys are ignored": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): current.doc, "key_provider.aws_kms.x": []byte("{}")},
			payload: current.payload,
		},
		"wrong passphrase": {
			keys:          []Key{keyWrong},
			meta:          map[string][]byte{MetaKey(providerCurrent): current.doc},
			payload:       current.payload,
			wantErr:       ErrDecryptionFailed,
			wantInMessage: []string{providerCurrent, "message authentication failed"},
			secrets:       [][]byte{current.key},
		},
		"fallback opens an old state the primary is absent from": {
			keys:    []Key{keyCurrent, keyOld},
			meta:    map[string][]byte{MetaKey(providerOld): old.doc},
			payload: old.payload,
		},
		"fallback opens when the primary fails": {
			keys:    []Key{keyCurrent, keyOld},
			meta:    map[string][]byte{MetaKey(providerCurrent): other.doc, MetaKey(providerOld): old.doc},
			payload: old.payload,
		},
		"fallback opens when the primary's parameters are invalid": {
			keys:    []Key{keyCurrent, keyOld},
			meta:    map[string][]byte{MetaKey(providerCurrent): []byte("{"), MetaKey(providerOld): old.doc},
			payload: old.payload,
		},
		"every key fails": {
			keys:          []Key{keyWrong, {Provider: providerOld, Passphrase: []byte(passCurrent)}},
			meta:          map[string][]byte{MetaKey(providerCurrent): current.doc, MetaKey(providerOld): old.doc},
			payload:       current.payload,
			wantErr:       ErrDecryptionFailed,
			wantInMessage: []string{providerCurrent, providerOld},
			secrets:       [][]byte{current.key, old.key},
		},
		"invalid parameters and a failing fallback": {
			keys:          []Key{keyCurrent, {Provider: providerOld, Passphrase: []byte(passWrong)}},
			meta:          map[string][]byte{MetaKey(providerCurrent): []byte("{"), MetaKey(providerOld): old.doc},
			payload:       old.payload,
			wantErr:       ErrInvalidParameters,
			wantInMessage: []string{"syntax error", "message authentication failed"},
		},
		"no configured provider in meta": {
			keys:          []Key{keyCurrent, keyOld},
			meta:          map[string][]byte{"key_provider.pbkdf2.someone_else": current.doc},
			payload:       current.payload,
			wantErr:       ErrNoMatchingKey,
			wantInMessage: []string{`"key_provider.pbkdf2.someone_else"`, MetaKey(providerCurrent), MetaKey(providerOld)},
		},
		"empty meta": {
			keys:          []Key{keyCurrent},
			meta:          map[string][]byte{},
			payload:       current.payload,
			wantErr:       ErrNoMatchingKey,
			wantInMessage: []string{"has no key"},
		},
		"empty keyring": {
			meta:          map[string][]byte{MetaKey(providerCurrent): current.doc},
			payload:       current.payload,
			wantErr:       ErrNoMatchingKey,
			wantInMessage: []string{"looks for no key"},
		},
		"many meta keys are listed up to a bound": {
			keys: []Key{keyCurrent},
			meta: func() map[string][]byte {
				m := map[string][]byte{}
				for i := range 20 {
					m["key_provider.pbkdf2.p"+strings.Repeat("x", 200)+string(rune('a'+i))] = nil
				}
				return m
			}(),
			payload:       current.payload,
			wantErr:       ErrNoMatchingKey,
			wantInMessage: []string{"and 12 more", "..."},
		},
		"minimum salt, iterations and key length": {
			keys: []Key{keyCurrent}, meta: map[string][]byte{MetaKey(providerCurrent): minSalt.doc}, payload: minSalt.payload,
		},
		"maximum salt": {
			keys: []Key{keyCurrent}, meta: map[string][]byte{MetaKey(providerCurrent): maxSalt.doc}, payload: maxSalt.payload,
		},
		"24-byte key": {
			keys: []Key{keyCurrent}, meta: map[string][]byte{MetaKey(providerCurrent): key24.doc}, payload: key24.payload,
		},
		"iterations below the minimum": {
			keys:          []Key{keyCurrent},
			meta:          map[string][]byte{MetaKey(providerCurrent): bounds(func(m *tofuMetadata) { m.Iterations = MinIterations - 1 })},
			payload:       current.payload,
			wantErr:       ErrInvalidParameters,
			wantInMessage: []string{"iterations 199999"},
		},
		"iterations above the maximum": {
			keys:          []Key{keyCurrent},
			meta:          map[string][]byte{MetaKey(providerCurrent): bounds(func(m *tofuMetadata) { m.Iterations = MaxIterations + 1 })},
			payload:       current.payload,
			wantErr:       ErrInvalidParameters,
			wantInMessage: []string{"iterations 2000001"},
		},
		"negative iterations": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): bounds(func(m *tofuMetadata) { m.Iterations = -600_000 })},
			payload: current.payload,
			wantErr: ErrInvalidParameters,
		},
		"unknown hash function": {
			keys:          []Key{keyCurrent},
			meta:          map[string][]byte{MetaKey(providerCurrent): bounds(func(m *tofuMetadata) { m.HashFunction = "sha1" })},
			payload:       current.payload,
			wantErr:       ErrInvalidParameters,
			wantInMessage: []string{`"sha1"`},
		},
		"missing hash function": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): bounds(func(m *tofuMetadata) { m.HashFunction = "" })},
			payload: current.payload,
			wantErr: ErrInvalidParameters,
		},
		"key length not an AES one": {
			keys:          []Key{keyCurrent},
			meta:          map[string][]byte{MetaKey(providerCurrent): bounds(func(m *tofuMetadata) { m.KeyLength = 20 })},
			payload:       current.payload,
			wantErr:       ErrInvalidParameters,
			wantInMessage: []string{"key_length 20"},
		},
		"zero key length": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): bounds(func(m *tofuMetadata) { m.KeyLength = 0 })},
			payload: current.payload,
			wantErr: ErrInvalidParameters,
		},
		"empty salt": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): bounds(func(m *tofuMetadata) { m.Salt = nil })},
			payload: current.payload,
			wantErr: ErrInvalidParameters,
		},
		"salt too long": {
			keys:          []Key{keyCurrent},
			meta:          map[string][]byte{MetaKey(providerCurrent): bounds(func(m *tofuMetadata) { m.Salt = randomBytes(MaxSaltLength + 1) })},
			payload:       current.payload,
			wantErr:       ErrInvalidParameters,
			wantInMessage: []string{"salt of 1025 bytes"},
		},
		"parameter document too large": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): []byte(`{"x":"` + strings.Repeat("a", 5000) + `"}`)},
			payload: current.payload,
			wantErr: ErrInvalidParameters,
		},
		"malformed meta JSON": {
			keys:          []Key{keyCurrent},
			meta:          map[string][]byte{MetaKey(providerCurrent): current.doc[:len(current.doc)-1]},
			payload:       current.payload,
			wantErr:       ErrInvalidParameters,
			wantInMessage: []string{"syntax error"},
		},
		"meta JSON null": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): []byte("null")},
			payload: current.payload,
			wantErr: ErrInvalidParameters,
		},
		"meta JSON an array": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): []byte("[]")},
			payload: current.payload,
			wantErr: ErrInvalidParameters,
		},
		"meta empty": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): nil},
			payload: current.payload,
			wantErr: ErrInvalidParameters,
		},
		"iterations a string": {
			keys:          []Key{keyCurrent},
			meta:          map[string][]byte{MetaKey(providerCurrent): []byte(`{"salt":"c2FsdA==","iterations":"600000","hash_function":"sha512","key_length":32}`)},
			payload:       current.payload,
			wantErr:       ErrInvalidParameters,
			wantInMessage: []string{`"iterations"`},
		},
		"iterations overflowing": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): []byte(`{"salt":"c2FsdA==","iterations":1` + strings.Repeat("0", 300) + `,"hash_function":"sha512","key_length":32}`)},
			payload: current.payload,
			wantErr: ErrInvalidParameters,
		},
		"salt not base64": {
			keys:          []Key{keyCurrent},
			meta:          map[string][]byte{MetaKey(providerCurrent): []byte(`{"salt":"!!!!","iterations":600000,"hash_function":"sha512","key_length":32}`)},
			payload:       current.payload,
			wantErr:       ErrInvalidParameters,
			wantInMessage: []string{"base64"},
		},
		"truncated payload": {
			keys:          []Key{keyCurrent},
			meta:          map[string][]byte{MetaKey(providerCurrent): current.doc},
			payload:       current.payload[:nonceSize+tagSize-1],
			wantErr:       ErrInvalidParameters,
			wantInMessage: []string{"27 bytes"},
		},
		"empty payload": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): current.doc},
			wantErr: ErrInvalidParameters,
		},
		"payload cut after the nonce and a tag's length": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): current.doc},
			payload: current.payload[:nonceSize+tagSize],
			wantErr: ErrDecryptionFailed,
			secrets: [][]byte{current.key},
		},
		"tampered ciphertext": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): current.doc},
			payload: tampered(current.payload, nonceSize+3),
			wantErr: ErrDecryptionFailed,
			secrets: [][]byte{current.key},
		},
		"tampered nonce": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): current.doc},
			payload: tampered(current.payload, 0),
			wantErr: ErrDecryptionFailed,
		},
		"tampered tag": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): current.doc},
			payload: tampered(current.payload, len(current.payload)-1),
			wantErr: ErrDecryptionFailed,
		},
		"tampered salt": {
			keys:    []Key{keyCurrent},
			meta:    map[string][]byte{MetaKey(providerCurrent): other.doc},
			payload: current.payload,
			wantErr: ErrDecryptionFailed,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := NewKeyring(tc.keys, NewKeyCache(0)).Decrypt(tc.meta, tc.payload)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Decrypt: %v", err)
				}
				if diff := cmp.Diff(string(plainState), string(got)); diff != "" {
					t.Errorf("Decrypt (-want +got):\n%s", diff)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Decrypt error = %v, want one matching %v", err, tc.wantErr)
			}
			if got != nil {
				t.Errorf("Decrypt returned %d bytes with its error", len(got))
			}
			for _, s := range tc.wantInMessage {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Decrypt error %q does not contain %q", err, s)
				}
			}
			checkNoSecret(t, err, tc.payload, tc.secrets)
		})
	}
}

// checkNoSecret fails the test when err's message quotes a passphrase of
// the tests, one of the derived keys (in hex or base64), or a stretch of
// the payload.
func checkNoSecret(t *testing.T, err error, payload []byte, keys [][]byte) {
	t.Helper()
	msg := err.Error()
	forbidden := []string{passCurrent, passOld, passWrong}
	for _, k := range keys {
		forbidden = append(forbidden, hex.EncodeToString(k), base64.StdEncoding.EncodeToString(k), string(k))
	}
	if len(payload) >= nonceSize {
		forbidden = append(forbidden, hex.EncodeToString(payload[:nonceSize]), base64.StdEncoding.EncodeToString(payload[:nonceSize]), string(payload[:nonceSize]))
	}
	for _, s := range forbidden {
		if strings.Contains(msg, s) {
			t.Errorf("error message %q quotes secret material", msg)
		}
	}
}

// TestKeyringCopiesKeys checks that NewKeyring copies its keys: the
// caller's slice may change afterwards.
func TestKeyringCopiesKeys(t *testing.T) {
	current := encrypt(t, plainState, passCurrent, fastParams())
	keys := []Key{{Provider: providerCurrent, Passphrase: []byte(passCurrent)}}
	ring := NewKeyring(keys, nil)
	keys[0] = Key{Provider: "changed"}
	got, err := ring.Decrypt(map[string][]byte{MetaKey(providerCurrent): current.doc}, current.payload)
	if err != nil {
		t.Fatalf("Decrypt: %v", err)
	}
	if diff := cmp.Diff(string(plainState), string(got)); diff != "" {
		t.Errorf("Decrypt (-want +got):\n%s", diff)
	}
}

// A Keyring is what statefile decrypts with.
var _ statefile.Decrypter = (*Keyring)(nil)
