package metricsauth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// expiringCache holds at most size values, each until its expiry. When it
// is full of values that have not expired, a new value is not kept: what
// cannot be cached is reviewed again, and the cache's memory stays bounded
// whatever tokens the requests carry.
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

// put keeps value for key until expires, dropping the entries expired at
// now first when the cache is full.
func (c *expiringCache[V]) put(key [sha256.Size]byte, value V, expires, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.size {
		for k, entry := range c.entries {
			if !now.Before(entry.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.size {
			return
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
