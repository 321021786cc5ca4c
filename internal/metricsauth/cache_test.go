package metricsauth

import (
	"crypto/sha256"
	"fmt"
	"net/http"
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
		"full of live values: the one that expires first makes room": {
			{put: "a", at: 0, wantLen: 1},
			{put: "b", at: time.Second, wantLen: 2},
			{put: "c", at: 2 * time.Second, wantLen: 2},
			{get: "a", at: 2 * time.Second, wantHit: false, wantLen: 2},
			{get: "b", at: 2 * time.Second, wantHit: true, wantLen: 2},
			{get: "c", at: 2 * time.Second, wantHit: true, wantLen: 2},
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

func TestGuardKeepsWhatItGrantedThroughAFloodOfRefusals(t *testing.T) {
	reviewer := newFakeReviewer()
	guard := NewGuard(reviewer)
	if code, _ := serve(t, guard, http.MethodGet, "/metrics", "Bearer scraper-token"); code != http.StatusOK {
		t.Fatalf("the scraper: got %d, want 200", code)
	}
	for i := range 3 * maxCached {
		serve(t, guard, http.MethodGet, "/metrics", fmt.Sprintf("Bearer forged-%d", i))
		serve(t, guard, fmt.Sprintf("M%d", i), "/metrics", "Bearer scraper-token")
	}
	for name, n := range map[string]int{
		"authenticated": guard.authenticated.len(), "rejected": guard.rejected.len(),
		"allowed": guard.allowed.len(), "denied": guard.denied.len(),
	} {
		if n > maxCached {
			t.Errorf("the %s cache holds %d entries, more than %d", name, n, maxCached)
		}
	}
	tokenCalls, accessCalls := reviewer.calls()
	if code, _ := serve(t, guard, http.MethodGet, "/metrics", "Bearer scraper-token"); code != http.StatusOK {
		t.Errorf("the scraper after the flood: got %d, want 200", code)
	}
	if gotToken, gotAccess := reviewer.calls(); gotToken != tokenCalls || gotAccess != accessCalls {
		t.Errorf("the scraper after the flood was reviewed again (%d TokenReviews, %d SubjectAccessReviews more): "+
			"the refusals pushed out what it was granted", gotToken-tokenCalls, gotAccess-accessCalls)
	}
}
