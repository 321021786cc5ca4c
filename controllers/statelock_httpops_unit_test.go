package controllers

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateserver"
)

// TestHTTPLockOperations runs a StateLock's operations in turn against the
// reference server, each with a new locker as the reconciler builds them:
// take, check, lose to terraform force-unlock and another run, check
// again (never taking the lock back), and a release of the lock it
// recorded that leaves the other's lock alone.
func TestHTTPLockOperations(t *testing.T) {
	ctx := t.Context()
	lt := newLockTraffic(t, stateserver.WithUnlockBodies(stateserver.AcceptEmptyUnlock))
	sl := makeSlock().Obj()

	res := runSlockOp(ctx, t, lt.learnedLocker(ctx, t), sl, slockHold)
	applySlockResult(sl, res, slockBackend, everyKindsFailures)
	id := sl.Status.LockID
	if res.taken == nil || id == "" {
		t.Fatalf("first hold = %+v, want the lock taken", res)
	}
	if got := lt.holderID(ctx, t); got != id {
		t.Fatalf("the server holds %q, want %s", got, id)
	}
	recorded := sl.DeepCopy()
	res = runSlockOp(ctx, t, lt.learnedLocker(ctx, t), sl, slockHold)
	applySlockResult(sl, res, slockBackend, everyKindsFailures)
	if !res.kept {
		t.Errorf("check = %+v, want kept", res)
	}

	// terraform force-unlock (an empty body), then a run takes the lock.
	if err := lt.client(t).ForceUnlockEmptyBody(ctx); err != nil {
		t.Fatal(err)
	}
	lt.hold(ctx, t, "alice-1", "alice@laptop")
	res = runSlockOp(ctx, t, lt.learnedLocker(ctx, t), sl, slockHold)
	applySlockResult(sl, res, slockBackend, everyKindsFailures)
	if res.holder == nil || res.holder.ID != "alice-1" || !lockLost(sl) || planStateLock(sl, slockNow) != slockIdle {
		t.Errorf("check after the loss = %+v, lockLost %v, plan %v; want lost to alice-1, idle", res, lockLost(sl), planStateLock(sl, slockNow))
	}
	if requests := mustTake(lt); slices.Contains(requests, "LOCK "+id) {
		t.Errorf("the check sent the StateLock's own LOCK again: %q", requests)
	}

	// A release of the lock it recorded (the StateLock expired, or was
	// deleted, before it saw the loss): alice's lock stays.
	res = runSlockOp(ctx, t, lt.learnedLocker(ctx, t), recorded, slockRelease)
	if res.released || res.err != nil || res.holder == nil || res.holder.ID != "alice-1" {
		t.Errorf("release = %+v, want nothing released, alice named as the holder", res)
	}
	// The server checks the ID the UNLOCK names: the StateLock's own
	// body cannot release alice's lock, and is sent without a check.
	if diff := cmp.Diff([]string{"UNLOCK " + id}, mustTake(lt)); diff != "" {
		t.Errorf("the release's requests (-want +got):\n%s", diff)
	}
	if got := lt.holderID(ctx, t); got != "alice-1" {
		t.Errorf("the server holds %q, want alice-1", got)
	}
}

// mustTake returns the lock requests recorded so far, and forgets them.
func mustTake(lt *lockTraffic) []string {
	requests, _ := lt.take()
	return requests
}

// TestHTTPLockTakenAndNotRecorded checks, on a server that accepts only
// the exact LockInfo, the locks a StateLock took and could not record
// (the manager stopped, the status write failed): the next take adopts
// it and a later release, with the LockInfo read back from status,
// releases it; a deletion that finds it releases it too, with the
// LockInfo the server answered.
func TestHTTPLockTakenAndNotRecorded(t *testing.T) {
	ctx := t.Context()
	// takeUnrecorded takes the StateLock's lock and forgets the result.
	takeUnrecorded := func(t *testing.T, lt *lockTraffic, sl *backendsv1alpha1.StateLock) string {
		t.Helper()
		info := newStateLockInfo(sl, slockNow)
		lt.mustAcquire(ctx, t, lt.learnedLocker(ctx, t), info)
		return info.ID
	}

	t.Run("adopted, then released at expiry", func(t *testing.T) {
		lt := newLockTraffic(t, stateserver.WithUnlockBodies(stateserver.AcceptNoForceUnlock))
		sl := makeSlock().Obj()
		id := takeUnrecorded(t, lt, sl)
		res := runSlockOp(ctx, t, lt.learnedLocker(ctx, t), sl, slockHold)
		if res.taken == nil || res.taken.id != id {
			t.Fatalf("hold = %+v, want lock %s adopted", res, id)
		}
		applySlockResult(sl, res, slockBackend, everyKindsFailures)
		if requests := mustTake(lt); slices.Contains(requests, "UNLOCK "+id) {
			t.Errorf("the take released the lock it adopted: %q", requests)
		}

		// Read back from the API server, then expired.
		stored := &backendsv1alpha1.StateLock{}
		data, err := json.Marshal(sl)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, stored); err != nil {
			t.Fatal(err)
		}
		if res := runSlockOp(ctx, t, lt.learnedLocker(ctx, t), stored, slockRelease); !res.released {
			t.Errorf("release = %+v, want released", res)
		}
		if got := lt.holderID(ctx, t); got != "" {
			t.Errorf("the server still holds %q", got)
		}
	})

	t.Run("released on deletion", func(t *testing.T) {
		lt := newLockTraffic(t, stateserver.WithUnlockBodies(stateserver.AcceptNoForceUnlock))
		sl := makeSlock().Obj()
		id := takeUnrecorded(t, lt, sl)
		if res := runSlockOp(ctx, t, lt.learnedLocker(ctx, t), sl, slockRelease); !res.released {
			t.Errorf("release = %+v, want released", res)
		}
		if diff := cmp.Diff([]string{"LOCK " + slockCheckID, "UNLOCK " + id}, mustTake(lt)); diff != "" {
			t.Errorf("lock requests (-want +got):\n%s", diff)
		}
		if got := lt.holderID(ctx, t); got != "" {
			t.Errorf("the server still holds %q", got)
		}
	})
}
