package stateencryption

import (
	"bytes"
	"testing"
)

// BenchmarkDecrypt decrypts a state encrypted with OpenTofu's default
// parameters (600,000 iterations of SHA-512, a 32-byte key): through a
// warm KeyCache, as a probe of an unchanged state does, and without a
// cache, which runs PBKDF2 each time.
func BenchmarkDecrypt(b *testing.B) {
	plain := bytes.Repeat(plainState, 100) // about 13 KB
	e := encrypt(b, plain, passCurrent, tofuDefaults())
	meta := map[string][]byte{MetaKey(providerCurrent): e.doc}
	keys := []Key{{Provider: providerCurrent, Passphrase: []byte(passCurrent)}}
	cases := map[string]*KeyCache{"cache hit": NewKeyCache(0), "cache miss": nil}
	for name, cache := range cases {
		b.Run(name, func(b *testing.B) {
			ring := NewKeyring(keys, cache)
			if _, err := ring.Decrypt(meta, e.payload); err != nil { // warms the cache
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ring.Decrypt(meta, e.payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
