package stateencryption

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// countingDerive is a deriveFunc that counts its calls and returns a key
// computed cheaply from its inputs, so that the cache's results can be
// checked without running PBKDF2.
type countingDerive struct {
	calls atomic.Int64
}

// derive counts the call and returns the cheap key of passphrase and p.
func (d *countingDerive) derive(passphrase []byte, p params) ([]byte, error) {
	d.calls.Add(1)
	return cheapKey(passphrase, p), nil
}

// cheapKey is a stand-in for the derived key of passphrase and p.
func cheapKey(passphrase []byte, p params) []byte {
	id := newCacheKey(passphrase, p)
	sum := sha256.Sum256([]byte(id))
	return sum[:p.KeyLength]
}

// saltParams returns valid parameters with salt s.
func saltParams(s string) params {
	return params{Salt: []byte(s), Iterations: MinIterations, HashFunction: "sha256", KeyLength: 16}
}

func TestKeyCacheHitDoesNotDerive(t *testing.T) {
	pass := []byte(passCurrent)
	cases := map[string]struct {
		cache *KeyCache
		// lookups are the salts looked up in order.
		lookups []string
		// wantCalls is how many derivations they cost.
		wantCalls int64
	}{
		"hit":                         {cache: NewKeyCache(4), lookups: []string{"a", "a", "a"}, wantCalls: 1},
		"new salt derives":            {cache: NewKeyCache(4), lookups: []string{"a", "b", "a", "b"}, wantCalls: 2},
		"nil cache always derives":    {cache: nil, lookups: []string{"a", "a", "a"}, wantCalls: 3},
		"evicted entry derives again": {cache: NewKeyCache(1), lookups: []string{"a", "b", "a"}, wantCalls: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var d countingDerive
			for _, salt := range tc.lookups {
				got, err := tc.cache.key(pass, saltParams(salt), d.derive)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(cheapKey(pass, saltParams(salt)), got); diff != "" {
					t.Errorf("key(%q) (-want +got):\n%s", salt, diff)
				}
			}
			if got := d.calls.Load(); got != tc.wantCalls {
				t.Errorf("%d derivations, want %d", got, tc.wantCalls)
			}
		})
	}
}

func TestKeyCacheEvictsLeastRecentlyUsed(t *testing.T) {
	pass := []byte(passCurrent)
	var d countingDerive
	c := NewKeyCache(3)
	for _, salt := range []string{"a", "b", "c", "a", "d"} { // "a" is used again, so "b" leaves for "d"
		if _, err := c.key(pass, saltParams(salt), d.derive); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Len(); got != 3 {
		t.Errorf("Len = %d, want 3", got)
	}
	cached := map[string]bool{}
	for _, salt := range []string{"a", "b", "c", "d"} {
		_, cached[salt] = c.get(newCacheKey(pass, saltParams(salt)))
	}
	if diff := cmp.Diff(map[string]bool{"a": true, "b": false, "c": true, "d": true}, cached); diff != "" {
		t.Errorf("cached salts (-want +got):\n%s", diff)
	}
}

func TestNewKeyCacheSize(t *testing.T) {
	cases := map[string]struct {
		size, want int
	}{
		"zero is the default":     {size: 0, want: DefaultKeyCacheSize},
		"negative is the default": {size: -1, want: DefaultKeyCacheSize},
		"explicit":                {size: 5, want: 5},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var d countingDerive
			c := NewKeyCache(tc.size)
			for i := range tc.want + 10 {
				if _, err := c.key([]byte(passCurrent), saltParams(fmt.Sprint(i)), d.derive); err != nil {
					t.Fatal(err)
				}
			}
			if got := c.Len(); got != tc.want {
				t.Errorf("Len = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestKeyCacheDoesNotCacheErrors(t *testing.T) {
	c := NewKeyCache(4)
	calls := 0
	failing := func([]byte, params) ([]byte, error) {
		calls++
		return nil, errors.New("derivation failed")
	}
	for range 2 {
		if _, err := c.key([]byte(passCurrent), saltParams("a"), failing); err == nil {
			t.Fatal("key returned no error")
		}
	}
	if calls != 2 || c.Len() != 0 {
		t.Errorf("%d derivations and %d entries, want 2 and 0", calls, c.Len())
	}
}

// TestCacheKeyIsUnambiguous checks that derivations differing in any one
// input, or only in where one field ends and the next begins, have
// distinct cache keys.
func TestCacheKeyIsUnambiguous(t *testing.T) {
	base := params{Salt: []byte("salt"), Iterations: 600_000, HashFunction: "sha512", KeyLength: 32}
	with := func(edit func(*params)) params {
		p := base
		edit(&p)
		return p
	}
	inputs := map[string]struct {
		passphrase string
		p          params
	}{
		"base":                           {"pass", base},
		"passphrase":                     {"pasS", base},
		"salt":                           {"pass", with(func(p *params) { p.Salt = []byte("salT") })},
		"boundary between pass and salt": {"pas", with(func(p *params) { p.Salt = []byte("ssalt") })},
		"iterations":                     {"pass", with(func(p *params) { p.Iterations = 600_001 })},
		"hash function":                  {"pass", with(func(p *params) { p.HashFunction = "sha256" })},
		"key length":                     {"pass", with(func(p *params) { p.KeyLength = 16 })},
	}
	seen := map[cacheKey]string{}
	for name, in := range inputs {
		id := newCacheKey([]byte(in.passphrase), in.p)
		if other, ok := seen[id]; ok {
			t.Errorf("%s and %s have the same cache key", name, other)
		}
		seen[id] = name
		if again := newCacheKey([]byte(in.passphrase), in.p); again != id {
			t.Errorf("%s: the cache key is not stable", name)
		}
	}
}

// TestKeyCacheConcurrentUse runs lookups of overlapping salts from many
// goroutines through a cache smaller than the salts, under -race in CI:
// every lookup must return its own key.
func TestKeyCacheConcurrentUse(t *testing.T) {
	pass := []byte(passCurrent)
	c := NewKeyCache(4)
	var d countingDerive
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				p := saltParams(fmt.Sprint((g + i) % 10))
				got, err := c.key(pass, p, d.derive)
				if err == nil && !bytes.Equal(got, cheapKey(pass, p)) {
					err = fmt.Errorf("salt %q: wrong key", p.Salt)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := c.Len(); got != 4 {
		t.Errorf("Len = %d, want 4", got)
	}
}

// TestKeyringUsesCache checks that decrypting an unchanged state again
// through a cache derives no key, and that a nil cache derives each time.
func TestKeyringUsesCache(t *testing.T) {
	current := encrypt(t, plainState, passCurrent, fastParams())
	meta := map[string][]byte{MetaKey(providerCurrent): current.doc}
	keys := []Key{{Provider: providerCurrent, Passphrase: []byte(passCurrent)}}
	cases := map[string]struct {
		cache     *KeyCache
		wantCalls int64
	}{
		"cache": {cache: NewKeyCache(0), wantCalls: 1},
		"nil":   {cache: nil, wantCalls: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ring := NewKeyring(keys, tc.cache)
			var calls atomic.Int64
			ring.derive = func(passphrase []byte, p params) ([]byte, error) {
				calls.Add(1)
				return deriveKey(passphrase, p)
			}
			for range 3 {
				got, err := ring.Decrypt(meta, current.payload)
				if err != nil {
					t.Fatalf("Decrypt: %v", err)
				}
				if diff := cmp.Diff(string(plainState), string(got)); diff != "" {
					t.Errorf("Decrypt (-want +got):\n%s", diff)
				}
			}
			if got := calls.Load(); got != tc.wantCalls {
				t.Errorf("%d derivations, want %d", got, tc.wantCalls)
			}
		})
	}
}
