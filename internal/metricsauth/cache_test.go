package metricsauth

import (
	"crypto/sha256"
	"testing"
	"time"
)

func key(s string) [sha256.Size]byte { return sha256.Sum256([]byte(s)) }

func TestExpiringCache(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 11, 0, 0, 0, time.UTC)
	type step struct {
		put     string // key to put, valid for a minute from at; "" for a get
		get     string // key to get
		at      time.Duration
		wantHit bool
		wantLen int
	}
	cases := map[string][]step{
		"a value until its expiry": {
			{put: "a", at: 0, wantLen: 1},
			{get: "a", at: time.Minute - time.Nanosecond, wantHit: true, wantLen: 1},
			{get: "a", at: time.Minute, wantHit: false, wantLen: 1},
		},
		"full of live values: the new one is not kept": {
			{put: "a", at: 0, wantLen: 1},
			{put: "b", at: 0, wantLen: 2},
			{put: "c", at: time.Second, wantLen: 2},
			{get: "c", at: time.Second, wantHit: false, wantLen: 2},
			{get: "a", at: time.Second, wantHit: true, wantLen: 2},
		},
		"full: the expired values make room": {
			{put: "a", at: 0, wantLen: 1},
			{put: "b", at: 30 * time.Second, wantLen: 2},
			{put: "c", at: time.Minute, wantLen: 2},
			{get: "a", at: time.Minute, wantHit: false, wantLen: 2},
			{get: "c", at: time.Minute, wantHit: true, wantLen: 2},
			{get: "b", at: time.Minute, wantHit: true, wantLen: 2},
		},
		"full: a key present is renewed": {
			{put: "a", at: 0, wantLen: 1},
			{put: "b", at: 0, wantLen: 2},
			{put: "a", at: 50 * time.Second, wantLen: 2},
			{get: "a", at: 100 * time.Second, wantHit: true, wantLen: 2},
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			c := newExpiringCache[string](2)
			for i, s := range steps {
				now := t0.Add(s.at)
				if s.put != "" {
					c.put(key(s.put), s.put, now.Add(time.Minute), now)
				} else {
					v, hit := c.get(key(s.get), now)
					if hit != s.wantHit || (hit && v != s.get) {
						t.Errorf("step %d: get(%q) = %q, %v; want hit %v", i, s.get, v, hit, s.wantHit)
					}
				}
				if got := c.len(); got != s.wantLen {
					t.Errorf("step %d: %d entries, want %d", i, got, s.wantLen)
				}
			}
		})
	}
}

func TestGuardCachesStayBoundedUnderForgedTokens(t *testing.T) {
	reviewer := newFakeReviewer()
	guard := NewGuard(reviewer)
	for i := range 3 * maxCached {
		serve(t, guard, "GET", "/metrics", "Bearer forged-"+string(rune('a'+i%26))+string(rune(i)))
	}
	if n := guard.tokens.len(); n > maxCached {
		t.Errorf("token cache holds %d entries, more than %d", n, maxCached)
	}
	if code, _ := serve(t, guard, "GET", "/metrics", "Bearer scraper-token"); code != 200 {
		t.Errorf("the scraper, with the cache full: got %d, want 200", code)
	}
}
