package controllers

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"encoding/json"
	"fmt"

	"github.com/infrastate/backend-operator/internal/stateencryption"
)

// keyParams are the pbkdf2 parameters of an encrypted state, as OpenTofu
// records them in its meta (the JSON field names are OpenTofu's); salt is
// base64 in the document.
type keyParams struct {
	Salt         []byte `json:"salt"`
	Iterations   int    `json:"iterations"`
	HashFunction string `json:"hash_function"`
	KeyLength    int    `json:"key_length"`
}

// tofuEnvelope is the document of an OpenTofu state, as far as these
// tests write it: []byte fields are base64 in the document.
type tofuEnvelope struct {
	Serial            int               `json:"serial"`
	Lineage           string            `json:"lineage"`
	Meta              map[string][]byte `json:"meta"`
	EncryptedData     []byte            `json:"encrypted_data"`
	EncryptionVersion string            `json:"encryption_version"`
}

// encryptedState is an OpenTofu-encrypted state of serial and lineage
// with a single output, as the pbkdf2 key provider and the aes_gcm method
// write it: each key of keys has parameters in its meta, of iterations of
// SHA-512 with a fresh salt of saltBytes, and the payload is encrypted
// with the key of keys[opener]; with an opener of -1 the payload is
// random bytes, which no key opens, and nothing is derived to write it.
// Every call gives a new salt, as every write does: no key of an earlier
// call serves it.
func encryptedState(keys []stateencryption.Key, opener, iterations, saltBytes, serial int, lineage string) ([]byte, error) {
	env := tofuEnvelope{Serial: serial, Lineage: lineage, Meta: map[string][]byte{}, EncryptionVersion: "v0"}
	var aead cipher.AEAD
	for i, k := range keys {
		p := keyParams{Salt: make([]byte, saltBytes), Iterations: iterations, HashFunction: "sha512", KeyLength: 32}
		_, _ = rand.Read(p.Salt)
		doc, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		env.Meta[stateencryption.MetaKey(k.Provider)] = doc
		if i != opener {
			continue
		}
		key, err := pbkdf2.Key(sha512.New, string(k.Passphrase), p.Salt, p.Iterations, p.KeyLength)
		if err != nil {
			return nil, err
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		if aead, err = cipher.NewGCM(block); err != nil {
			return nil, err
		}
	}
	if opener < 0 {
		env.EncryptedData = make([]byte, 256)
		_, _ = rand.Read(env.EncryptedData)
		return json.Marshal(env)
	}
	if aead == nil {
		return nil, fmt.Errorf("no key %d among %d", opener, len(keys))
	}
	plain := fmt.Sprintf(`{"version":4,"terraform_version":"1.12.6","serial":%d,"lineage":%q,`+
		`"outputs":{"region":{"value":"eu-west-1","type":"string"}},"resources":[]}`, serial, lineage)
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	env.EncryptedData = aead.Seal(nonce, nonce, []byte(plain), nil)
	return json.Marshal(env)
}
