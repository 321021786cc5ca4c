package controllers

import (
	"context"
	"encoding/json"
	"testing"

	"k8s.io/utils/clock"

	"github.com/google/go-cmp/cmp"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/stateserver"
)

// locker returns an httpLocker with a new client, as the StateLock
// team-a/freeze builds it (see httpResolved.locker).
func (lt *lockTraffic) locker(t *testing.T) *httpLocker {
	t.Helper()
	return &httpLocker{sc: lt.client(t), check: httpProbeRun{clock: clock.RealClock{},
		checkLock: true, lockID: slockCheckID, who: "backend-operator lock check of StateLock team-a/freeze", info: "lock check",
	}}
}

// mustAcquire takes the lock with info through l, fails the test when it
// is not taken, and forgets the traffic.
func (lt *lockTraffic) mustAcquire(ctx context.Context, t *testing.T, l *httpLocker, info stateclient.LockInfo) *heldLock {
	t.Helper()
	taken, _, err := l.acquire(ctx, info)
	if err != nil || taken == nil {
		t.Fatalf("acquire() = %+v, %v", taken, err)
	}
	lt.take()
	return taken
}

// slockCheckID is the lock check ID of the StateLock of these tests.
var slockCheckID = lockCheckID("uid-freeze")

// throughStatus is held as the reconcile reads it back from status after
// the API server stored it.
func throughStatus(t *testing.T, held heldLock) heldLock {
	t.Helper()
	data, err := json.Marshal(held.info)
	if err != nil {
		t.Fatal(err)
	}
	var info backendsv1alpha1.LockInfo
	if err := json.Unmarshal(data, &info); err != nil {
		t.Fatal(err)
	}
	return heldLock{id: held.id, info: info}
}

func TestHTTPLockerAcquire(t *testing.T) {
	ctx := t.Context()
	info := newStateLockInfo(makeSlock().Obj(), slockNow)

	t.Run("free: taken with the given ID", func(t *testing.T) {
		lt := newLockTraffic(t, stateserver.AcceptAnyUnlock)
		taken, holder, err := lt.locker(t).acquire(ctx, info)
		want := &heldLock{id: info.ID, info: *lockInfo(&info)}
		if diff := cmp.Diff(want, taken, cmp.AllowUnexported(heldLock{})); diff != "" || holder != nil || err != nil {
			t.Errorf("acquire() = %+v, %+v, %v; want taken (-want +got):\n%s", taken, holder, err, diff)
		}
		if got := lt.holderID(ctx, t); got != info.ID {
			t.Errorf("the server holds %q, want %s", got, info.ID)
		}
	})

	t.Run("held by another: its holder", func(t *testing.T) {
		lt := newLockTraffic(t, stateserver.AcceptAnyUnlock)
		alice := lt.hold(ctx, t, "alice-1", "alice@laptop")
		taken, holder, err := lt.locker(t).acquire(ctx, info)
		if diff := cmp.Diff(lockInfo(alice), holder); diff != "" || taken != nil || err != nil {
			t.Errorf("acquire() = %+v, %+v, %v; want alice's lock (-want +got):\n%s", taken, holder, err, diff)
		}
		if got := lt.holderID(ctx, t); got != "alice-1" {
			t.Errorf("the server holds %q, want alice-1", got)
		}
	})
}

func TestHTTPLockerHolder(t *testing.T) {
	ctx := t.Context()
	info := newStateLockInfo(makeSlock().Obj(), slockNow)
	cases := map[string]struct {
		accept       stateserver.UnlockBodies
		setup        func(t *testing.T, lt *lockTraffic)
		want         *backendsv1alpha1.LockInfo
		wantRequests []string
		wantHeld     string
		// wantErr is set when holder must fail: it cannot tell the holder.
		// Such a case takes seconds: the check retries its own release.
		wantErr bool
	}{
		"free: none, the check's own lock released": {
			accept:       stateserver.AcceptNoForceUnlock,
			setup:        func(*testing.T, *lockTraffic) {},
			wantRequests: []string{"LOCK " + slockCheckID, "UNLOCK " + slockCheckID},
		},
		"the StateLock holds it: its info, and it stays held": {
			accept: stateserver.AcceptNoForceUnlock,
			setup: func(t *testing.T, lt *lockTraffic) {
				t.Helper()
				if _, err := lt.client(t).Lock(ctx, info); err != nil {
					t.Fatal(err)
				}
				lt.take()
			},
			want:         lockInfo(&info),
			wantRequests: []string{"LOCK " + slockCheckID},
			wantHeld:     info.ID,
		},
		"another holds it: its info, and it stays held": {
			accept: stateserver.AcceptNoForceUnlock,
			setup: func(t *testing.T, lt *lockTraffic) {
				t.Helper()
				lt.hold(ctx, t, "alice-1", "alice@laptop")
			},
			want:         lockInfo(&stateclient.LockInfo{ID: "alice-1", Operation: "OperationTypeApply", Who: "alice@laptop", Version: "1.5.7", Created: slockNow}),
			wantRequests: []string{"LOCK " + slockCheckID},
			wantHeld:     "alice-1",
		},
		"the check's own lock left over: released, then none": {
			accept: stateserver.AcceptAnyUnlock,
			setup: func(t *testing.T, lt *lockTraffic) {
				t.Helper()
				lt.hold(ctx, t, slockCheckID, "backend-operator lock check")
			},
			wantRequests: []string{
				"LOCK " + slockCheckID, "UNLOCK " + slockCheckID, "LOCK " + slockCheckID, "UNLOCK " + slockCheckID,
			},
		},
		"the check's own lock left over, its release refused: an error, not a holder": {
			accept: stateserver.AcceptNoForceUnlock,
			setup: func(t *testing.T, lt *lockTraffic) {
				t.Helper()
				lt.hold(ctx, t, slockCheckID, "backend-operator lock check")
			},
			wantRequests: []string{
				"LOCK " + slockCheckID,
				"UNLOCK " + slockCheckID, "UNLOCK", "UNLOCK " + slockCheckID, "UNLOCK", "UNLOCK " + slockCheckID, "UNLOCK",
			},
			wantHeld: slockCheckID,
			wantErr:  true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			lt := newLockTraffic(t, tc.accept)
			tc.setup(t, lt)
			got, err := lt.locker(t).holder(ctx)
			if (err != nil) != tc.wantErr {
				t.Errorf("holder() = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("holder (-want +got):\n%s", diff)
			}
			requests, _ := lt.take()
			if diff := cmp.Diff(tc.wantRequests, requests); diff != "" {
				t.Errorf("lock requests (-want +got):\n%s", diff)
			}
			if got := lt.holderID(ctx, t); got != tc.wantHeld {
				t.Errorf("the server holds %q after holder(), want %q", got, tc.wantHeld)
			}
		})
	}
}

// TestHTTPLockerRelease releases a StateLock's lock on servers that accept
// different UNLOCK bodies, with the LockInfo read back from status, by the
// client that took it and by a fresh one (a later operation, a restart):
// Terraform's own unlock body, the exact LockInfo, releases it on each.
func TestHTTPLockerRelease(t *testing.T) {
	ctx := t.Context()
	for _, accept := range []stateserver.UnlockBodies{
		stateserver.AcceptAnyUnlock, stateserver.AcceptEmptyUnlock, stateserver.AcceptIDUnlock, stateserver.AcceptNoForceUnlock,
	} {
		for _, fresh := range []bool{false, true} {
			t.Run(acceptCaseName(accept, fresh), func(t *testing.T) {
				lt := newLockTraffic(t, accept)
				info := newStateLockInfo(makeSlock().Obj(), slockNow)
				l := lt.locker(t)
				taken := lt.mustAcquire(ctx, t, l, info)
				if fresh {
					l = lt.locker(t)
				}
				if err := l.release(ctx, throughStatus(t, *taken)); err != nil {
					t.Fatalf("release() = %v", err)
				}
				body, _ := json.Marshal(info)
				requests, unlocks := lt.take()
				if diff := cmp.Diff([]string{string(body)}, unlocks); diff != "" {
					t.Errorf("UNLOCK bodies (requests %q) (-want +got):\n%s", requests, diff)
				}
				if got := lt.holderID(ctx, t); got != "" {
					t.Errorf("the server still holds %q", got)
				}
			})
		}
	}
}

// acceptCaseName names a case of TestHTTPLockerRelease.
func acceptCaseName(accept stateserver.UnlockBodies, fresh bool) string {
	name := map[stateserver.UnlockBodies]string{
		stateserver.AcceptAnyUnlock: "any body", stateserver.AcceptEmptyUnlock: "exact or empty body",
		stateserver.AcceptIDUnlock: "ID body", stateserver.AcceptNoForceUnlock: "exact body only",
	}[accept]
	if fresh {
		return name + ", a fresh client"
	}
	return name + ", the client that took it"
}

// TestHTTPLockerReleaseLeavesOthersAlone checks that a release of a lock
// the StateLock no longer holds leaves the server's lock alone on every
// server, above all never sends the empty body, which releases whatever
// lock is held.
func TestHTTPLockerReleaseLeavesOthersAlone(t *testing.T) {
	ctx := t.Context()
	for _, accept := range []stateserver.UnlockBodies{stateserver.AcceptAnyUnlock, stateserver.AcceptEmptyUnlock} {
		for name, other := range map[string]string{"another holds it": "alice-1", "nobody holds it": ""} {
			t.Run(acceptCaseName(accept, true)+", "+name, func(t *testing.T) {
				lt := newLockTraffic(t, accept)
				if other != "" {
					lt.hold(ctx, t, other, "alice@laptop")
				}
				info := newStateLockInfo(makeSlock().Obj(), slockNow)
				if err := lt.locker(t).release(ctx, heldLock{id: info.ID, info: *lockInfo(&info)}); err != nil {
					t.Errorf("release() = %v, want nil: the StateLock's lock is gone", err)
				}
				requests, _ := lt.take()
				for _, r := range requests {
					if r == stateserver.MethodUnlock {
						t.Errorf("sent an empty-body UNLOCK (requests %q)", requests)
					}
				}
				if got := lt.holderID(ctx, t); got != other {
					t.Errorf("the server holds %q after the release, want %q", got, other)
				}
			})
		}
	}
}

// TestHTTPLockerReleaseOfAChangedBody checks the fallback of a release
// whose LockInfo the server does not take as the one stored (status was
// edited): a server that also accepts the empty body releases the lock,
// which holder() has just read is the StateLock's; one that accepts
// neither keeps it and says so.
func TestHTTPLockerReleaseOfAChangedBody(t *testing.T) {
	ctx := t.Context()
	cases := map[string]struct {
		accept      stateserver.UnlockBodies
		wantErr     bool
		wantUnlocks int
		wantHeld    bool
	}{
		"exact or empty body": {accept: stateserver.AcceptEmptyUnlock, wantUnlocks: 3},
		"exact body only":     {accept: stateserver.AcceptNoForceUnlock, wantErr: true, wantUnlocks: 3, wantHeld: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			lt := newLockTraffic(t, tc.accept)
			info := newStateLockInfo(makeSlock().Obj(), slockNow)
			taken := lt.mustAcquire(ctx, t, lt.locker(t), info)
			changed := *taken
			changed.info.Info = "edited"
			err := lt.locker(t).release(ctx, changed)
			if (err != nil) != tc.wantErr {
				t.Errorf("release() = %v, want error %v", err, tc.wantErr)
			}
			if _, unlocks := lt.take(); len(unlocks) != tc.wantUnlocks {
				t.Errorf("%d UNLOCKs %q, want %d", len(unlocks), unlocks, tc.wantUnlocks)
			}
			if held := lt.holderID(ctx, t) == info.ID; held != tc.wantHeld {
				t.Errorf("lock held after the release: %v, want %v", held, tc.wantHeld)
			}
		})
	}
}
