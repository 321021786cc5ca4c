package stateencryption

import (
	"container/list"
	"crypto/pbkdf2"
	"fmt"
	"strconv"
	"sync"

	"github.com/infrastate/backend-operator/internal/contenthash"
)

// DefaultKeyCacheSize is the number of derived keys a KeyCache holds when
// NewKeyCache is given no positive size: room for a current and a fallback
// key of a few dozen states.
const DefaultKeyCacheSize = 64

// deriveFunc derives the key of p from passphrase. Keyring holds one so
// that tests can count derivations.
type deriveFunc func(passphrase []byte, p params) ([]byte, error)

// deriveKey is PBKDF2 of passphrase with the salt, iterations, hash
// function and key length of p, as OpenTofu's pbkdf2 key provider derives
// it. p must be valid: Keyring.open derives only from parameters
// parseParams has validated, so the hash function is known.
func deriveKey(passphrase []byte, p params) ([]byte, error) {
	key, err := pbkdf2.Key(hashFunctions[p.HashFunction], string(passphrase), p.Salt, p.Iterations, p.KeyLength)
	if err != nil {
		return nil, fmt.Errorf("deriving the key: %w", err)
	}
	return key, nil
}

// cacheKey identifies one derivation: the contenthash.Sum (a SHA-256 of
// length-prefixed parts, so that no two inputs share an encoding) of the
// passphrase, the salt, the iterations, the hash function and the key
// length.
type cacheKey string

// newCacheKey returns the cacheKey of deriving p from passphrase.
func newCacheKey(passphrase []byte, p params) cacheKey {
	return cacheKey(contenthash.Sum(
		[]byte("stateencryption pbkdf2 v1"),
		passphrase,
		p.Salt,
		strconv.AppendInt(nil, int64(p.Iterations), 10),
		[]byte(p.HashFunction),
		strconv.AppendInt(nil, int64(p.KeyLength), 10),
	))
}

// KeyCache keeps the keys most recently derived from passphrases, so that
// probing an unchanged state again does not run hundreds of thousands of
// PBKDF2 iterations. A state's salt changes with every write, so an entry
// serves until the state is written again. Its entries are indexed by a
// hash of the derivation's inputs, never by the passphrase itself. It is
// safe for concurrent use; the nil *KeyCache caches nothing.
type KeyCache struct {
	// size is the most entries the cache holds.
	size int
	// mu guards order and entries.
	mu sync.Mutex
	// order lists the entries, most recently used first; each element's
	// value is a *cacheEntry.
	order *list.List
	// entries finds the element of order holding each key.
	entries map[cacheKey]*list.Element
}

// cacheEntry is one derived key of a KeyCache.
type cacheEntry struct {
	// id identifies the derivation.
	id cacheKey
	// key is the derived key; nothing modifies it once cached.
	key []byte
}

// NewKeyCache returns an empty KeyCache holding at most size keys, the
// least recently used leaving first; a size below 1 means
// DefaultKeyCacheSize.
func NewKeyCache(size int) *KeyCache {
	if size < 1 {
		size = DefaultKeyCacheSize
	}
	return &KeyCache{size: size, order: list.New(), entries: make(map[cacheKey]*list.Element)}
}

// Len returns the number of keys the cache holds.
func (c *KeyCache) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// key returns the key of p and passphrase: the cached one, or the one
// derive returns, which it then caches. Concurrent misses for the same
// inputs may each derive; the cache keeps one of the results. The
// returned key must not be modified. A nil cache always derives.
func (c *KeyCache) key(passphrase []byte, p params, derive deriveFunc) ([]byte, error) {
	if c == nil {
		return derive(passphrase, p)
	}
	id := newCacheKey(passphrase, p)
	if key, ok := c.get(id); ok {
		return key, nil
	}
	key, err := derive(passphrase, p)
	if err != nil {
		return nil, err
	}
	c.add(id, key)
	return key, nil
}

// get returns the key cached under id and marks it most recently used.
func (c *KeyCache) get(id cacheKey) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheEntry).key, true
}

// add caches key under id as the most recently used entry, evicting the
// least recently used one beyond the size. An entry already under id (a
// concurrent miss that derived first) is kept: both keys are equal.
func (c *KeyCache) add(id cacheKey, key []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[id]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.entries[id] = c.order.PushFront(&cacheEntry{id: id, key: key})
	for c.order.Len() > c.size {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*cacheEntry).id)
	}
}
