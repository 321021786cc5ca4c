// Package contenthash is the hash the operator records on the ConfigMaps
// and Secrets it writes, so that it can tell whether their data is still
// what it wrote without comparing the data itself, and the length-prefixed
// SHA-256 it is built on. It also names the annotation of the size it
// records next to the hash, which its API storage budget counts. Anything that writes such objects the way the
// operator does (the scale benchmark's floor) uses this package, so that
// the operator sees them as its own.
package contenthash

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Annotation holds the hash of the data the operator last wrote into a
// rendered or published object.
const Annotation = "backends.infrastate.io/content-hash"

// StoredBytesAnnotation holds the size, in decimal bytes, of the data the
// operator last wrote into a rendered or published object, counted as the
// API server counts it (keys and values). The manager's API storage
// budget adds these up per namespace, and learns them again from the
// watched metadata after a restart.
const StoredBytesAnnotation = "backends.infrastate.io/stored-bytes"

// Prefix starts a content hash: its algorithm, before the hex Sum.
const Prefix = "sha256:"

// Sum is the hex SHA-256 of parts, each prefixed with its length, so that
// no two different lists of parts have the same input.
func Sum(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(fmt.Appendf(nil, "%d:", len(p)))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ConfigMap hashes the data of a ConfigMap, its keys in order.
func ConfigMap(data map[string]string, binary map[string][]byte) string {
	parts := make([][]byte, 0, 2*(len(data)+len(binary)))
	for _, k := range slices.Sorted(maps.Keys(data)) {
		parts = append(parts, []byte("data/"+k), []byte(data[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(binary)) {
		parts = append(parts, []byte("binaryData/"+k), binary[k])
	}
	return Prefix + Sum(parts...)
}

// Secret hashes the data of a Secret, its keys in order.
func Secret(data map[string][]byte) string {
	parts := make([][]byte, 0, 2*len(data))
	for _, k := range slices.Sorted(maps.Keys(data)) {
		parts = append(parts, []byte(k), data[k])
	}
	return Prefix + Sum(parts...)
}

// Digest is a Sum in its 32 bytes rather than its 64 hex digits.
type Digest [sha256.Size]byte

// ParseSum reads digits as Sum writes them, 64 lowercase hex digits, and
// reports whether they were: any other text would not be given back by
// Sum as it was.
func ParseSum(digits string) (Digest, bool) {
	var d Digest
	if len(digits) != hex.EncodedLen(len(d)) || strings.ToLower(digits) != digits {
		return d, false
	}
	if _, err := hex.Decode(d[:], []byte(digits)); err != nil {
		return d, false
	}
	return d, true
}

// ParseHash reads a content hash as ConfigMap and Secret write it, Prefix
// and a Sum, and reports whether value was one.
func ParseHash(value string) (Digest, bool) {
	digits, ok := strings.CutPrefix(value, Prefix)
	if !ok {
		return Digest{}, false
	}
	return ParseSum(digits)
}

// Sum is d as Sum writes it.
func (d Digest) Sum() string { return hex.EncodeToString(d[:]) }

// Hash is d as a content hash, as ConfigMap and Secret write it.
func (d Digest) Hash() string { return Prefix + d.Sum() }
