package metricsauth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// expiringCache holds at most size values, each until its expiry. When it
// is full of values that have not expired, the one that expires first
// makes room: the cache's memory stays bounded whatever tokens the
// requests carry, and what it dropped is reviewed again.
type expiringCache[V any] struct {
	mu      sync.Mutex
	size    int
	entries map[[sha256.Size]byte]expiringEntry[V]
}

type expiringEntry[V any] struct {
	value   V
	expires time.Time
}

func newExpiringCache[V any](size int) *expiringCache[V] {
	return &expiringCache[V]{size: size, entries: make(map[[sha256.Size]byte]expiringEntry[V])}
}

// get returns the value of key when it has not expired at now.
func (c *expiringCache[V]) get(key [sha256.Size]byte, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	entry, ok := c.entries[key]
	if !ok || !now.Before(entry.expires) {
		var zero V
		return zero, false
	}
	return entry.value, true
}

// put keeps value for key until expires. When the cache is full, the
// entries expired at now go first, else the one that expires first.
func (c *expiringCache[V]) put(key [sha256.Size]byte, value V, expires, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.size {
		var (
			first      [sha256.Size]byte
			firstAt    time.Time
			firstFound bool
		)
		for k, entry := range c.entries {
			switch {
			case !now.Before(entry.expires):
				delete(c.entries, k)
			case !firstFound || entry.expires.Before(firstAt):
				first, firstAt, firstFound = k, entry.expires, true
			}
		}
		if len(c.entries) >= c.size && firstFound {
			delete(c.entries, first)
		}
	}
	c.entries[key] = expiringEntry[V]{value: value, expires: expires}
}

// len returns the number of entries, expired or not.
func (c *expiringCache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
