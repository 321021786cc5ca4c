package stateencryption

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/json"
	"hash"
	"testing"
)

// tofuMetadata is the parameter document OpenTofu's pbkdf2 key provider
// writes into a state's meta (its Metadata type): written out again here
// rather than taken from params, so that the tests check the field names.
type tofuMetadata struct {
	Salt         []byte `json:"salt"`
	Iterations   int    `json:"iterations"`
	HashFunction string `json:"hash_function"`
	KeyLength    int    `json:"key_length"`
}

// tofuDefaults are OpenTofu's default pbkdf2 parameters, with a 32-byte
// salt of the test's choosing.
func tofuDefaults() tofuMetadata {
	return tofuMetadata{Iterations: 600_000, HashFunction: "sha512", KeyLength: 32, Salt: randomBytes(32)}
}

// fastParams are the cheapest parameters within bounds, for tables that
// derive many keys.
func fastParams() tofuMetadata {
	return tofuMetadata{Iterations: MinIterations, HashFunction: "sha256", KeyLength: 16, Salt: randomBytes(16)}
}

// randomBytes returns n random bytes.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// encrypted is a state encrypted as OpenTofu encrypts it: the meta value
// of its key provider and the payload, both before base64.
type encrypted struct {
	// doc is the JSON parameter document of the key provider.
	doc []byte
	// payload is the nonce followed by the AES-GCM ciphertext and tag.
	payload []byte
	// key is the derived key, which no error may quote.
	key []byte
}

// encrypt encrypts plain with passphrase under the parameters m as
// OpenTofu's pbkdf2 key provider and aes_gcm method do (without
// additional data), deriving the key independently of the package.
func encrypt(tb testing.TB, plain []byte, passphrase string, m tofuMetadata) encrypted {
	tb.Helper()
	h := map[string]func() hash.Hash{"sha256": sha256.New, "sha512": sha512.New}[m.HashFunction]
	key, err := pbkdf2.Key(h, passphrase, m.Salt, m.Iterations, m.KeyLength)
	if err != nil {
		tb.Fatal(err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		tb.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		tb.Fatal(err)
	}
	nonce := randomBytes(gcm.NonceSize())
	doc, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return encrypted{doc: doc, payload: gcm.Seal(nonce, nonce, plain, nil), key: key}
}

// paramsDoc returns the JSON parameter document of m, for parameters that
// need no encryption (out of bounds ones).
func paramsDoc(tb testing.TB, m tofuMetadata) []byte {
	tb.Helper()
	doc, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return doc
}

// envelope is the JSON document OpenTofu stores for an encrypted state, as
// far as these tests read it: []byte fields are base64 in the document.
type envelope struct {
	Serial            int               `json:"serial"`
	Lineage           string            `json:"lineage"`
	Meta              map[string][]byte `json:"meta"`
	EncryptedData     []byte            `json:"encrypted_data"`
	EncryptionVersion string            `json:"encryption_version"`
}
