package stateclient

import (
	"container/list"
	"crypto/sha256"
	"crypto/tls"
	"strconv"
	"sync"
)

// TLSCache keeps the TLS material of Configs parsed (the CA pool, the
// client certificate and key), so that a client built again from the
// same material, as each periodic probe of a backend builds one, does not
// parse its certificates and key again: parsing a CA bundle or a private
// key costs more than the rest of a client. Parsed material is found by
// the SHA-256 of all of it, so that it is shared only with a Config of
// exactly the same material; each client still gets a TLS configuration,
// a transport and connections of its own. At most limit materials are
// kept, the least recently used dropped first: material that changed or
// is no longer used leaves as other material comes. It is safe for
// concurrent use.
type TLSCache struct {
	limit int

	mu      sync.Mutex
	entries map[tlsMaterialKey]*list.Element
	order   *list.List // of *tlsEntry, most recently used first
}

// tlsMaterialKey is the SHA-256 of a Config's TLS material.
type tlsMaterialKey [sha256.Size]byte

type tlsEntry struct {
	key      tlsMaterialKey
	material tlsMaterial
}

// NewTLSCache returns a cache of at most limit parsed materials.
func NewTLSCache(limit int) *TLSCache {
	return &TLSCache{limit: max(limit, 1), entries: map[tlsMaterialKey]*list.Element{}, order: list.New()}
}

// WithTLSCache makes New take the parsed TLS material of the Config from
// c, and record it there.
func WithTLSCache(c *TLSCache) Option {
	return func(o *options) { o.tlsCache = c }
}

// materialKey is the fingerprint of cfg's TLS material: each part
// prefixed with its length, so that no two different materials share
// one.
func materialKey(cfg Config) tlsMaterialKey {
	h := sha256.New()
	for _, part := range [][]byte{cfg.ClientCACertificatePEM, cfg.ClientCertificatePEM, cfg.ClientPrivateKeyPEM} {
		h.Write(strconv.AppendInt(nil, int64(len(part)), 10))
		h.Write([]byte{':'})
		h.Write(part)
	}
	var key tlsMaterialKey
	h.Sum(key[:0])
	return key
}

// configure is configureTLS with the material parsed once: it applies
// cfg's TLS attributes to base, parsing its material and recording it
// when the cache holds none. Material that does not parse is an error,
// and is not recorded.
func (c *TLSCache) configure(base *tls.Config, cfg Config) (*tls.Config, error) {
	if !hasTLSMaterial(cfg) {
		return configureTLS(base, cfg)
	}
	m, err := c.material(cfg)
	if err != nil {
		return nil, err
	}
	return m.apply(base, cfg.SkipCertVerification), nil
}

// material returns cfg's material parsed, from the cache or parsed now.
func (c *TLSCache) material(cfg Config) (tlsMaterial, error) {
	key := materialKey(cfg)
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.order.MoveToFront(e)
		m := e.Value.(*tlsEntry).material
		c.mu.Unlock()
		return m, nil
	}
	c.mu.Unlock()
	m, err := parseTLSMaterial(cfg)
	if err != nil {
		return m, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok {
		c.entries[key] = c.order.PushFront(&tlsEntry{key: key, material: m})
		for c.order.Len() > c.limit {
			oldest := c.order.Back()
			c.order.Remove(oldest)
			delete(c.entries, oldest.Value.(*tlsEntry).key)
		}
	}
	return m, nil
}

// Len is the number of materials held.
func (c *TLSCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
