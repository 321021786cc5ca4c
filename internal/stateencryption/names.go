package stateencryption

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxNamePart bounds each part of a key provider name taken from a
// reference: names stay readable, and the hash keeps them distinct.
const maxNamePart = 40

// KeyProviderName is the name of the pbkdf2 key provider, and of its
// aes_gcm method, that the operator renders for the passphrase at key of
// the Secret secretName: "secret_<name>_<key>_<hash>", where name and key
// have every character other than a letter, a digit or an underscore
// replaced by an underscore and are clipped, and hash is the first 8 hex
// digits of the SHA-256 of the name, a NUL byte and the key, which keeps
// distinct references distinct. It is a valid HCL identifier. OpenTofu
// records a state's key parameters under MetaKey of this name, so the name
// must not change while states written with the passphrase remain.
func KeyProviderName(secretName, key string) string {
	sum := sha256.Sum256([]byte(secretName + "\x00" + key))
	return "secret_" + sanitize(secretName) + "_" + sanitize(key) + "_" + hex.EncodeToString(sum[:4])
}

// MetaKey is the key of an encrypted state's meta under which OpenTofu
// stores the parameters of the pbkdf2 key provider named provider.
func MetaKey(provider string) string {
	return "key_provider.pbkdf2." + provider
}

// sanitize keeps letters, digits and underscores of s, replaces the rest
// with underscores and clips it to maxNamePart bytes.
func sanitize(s string) string {
	if len(s) > maxNamePart {
		s = s[:maxNamePart]
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		}
		return '_'
	}, s)
}
