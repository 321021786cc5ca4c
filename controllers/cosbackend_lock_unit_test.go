package controllers

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/cos/costest"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// slockBucket is the bucket of the cosLocker tests.
const slockBucket = "slock-1250000000"

// cosLockEnv is a COS double over loopback with a bucket whose state
// lives under the prefix "env".
type cosLockEnv struct {
	srv *costest.Server
}

func newCosLockEnv(t *testing.T) *cosLockEnv {
	t.Helper()
	srv := costest.NewServer(t)
	srv.AddCredentials(cosSecretID, cosSecretKey)
	srv.CreateBucket(slockBucket)
	return &cosLockEnv{srv: srv}
}

// client returns a new COS client of the bucket, as a locker builds one.
func (e *cosLockEnv) client(t *testing.T) *cos.Client {
	t.Helper()
	cfg := cos.Config{Bucket: slockBucket, Region: "ap-guangzhou", Prefix: "env", SecretID: cosSecretID, SecretKey: cosSecretKey}
	cc, err := cos.New(cfg, cos.WithBaseURL(e.srv.URL(slockBucket)))
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// locker returns a cosLocker of workspace with a new client.
func (e *cosLockEnv) locker(t *testing.T, workspace string) *cosLocker {
	t.Helper()
	return &cosLocker{cc: e.client(t), workspace: workspace}
}

// slockCosLockKey is the key of workspace's lock object.
func slockCosLockKey(workspace string) string {
	return cos.LockKey(cos.StateKey("env", "", workspace))
}

// holdAlice takes workspace's lock as alice's run would and returns the
// holder as the backend reports it.
func (e *cosLockEnv) holdAlice(ctx context.Context, t *testing.T, workspace string) *backendsv1alpha1.LockInfo {
	t.Helper()
	info := stateclient.LockInfo{ID: "alice-1", Operation: "OperationTypeApply", Who: "alice@laptop", Version: "1.5.7", Created: slockNow}
	if _, err := e.client(t).AcquireLock(ctx, workspace, info); err != nil {
		t.Fatalf("taking alice's lock: %v", err)
	}
	return e.holder(ctx, t, workspace)
}

// holder reads workspace's lock, nil when it is free.
func (e *cosLockEnv) holder(ctx context.Context, t *testing.T, workspace string) *backendsv1alpha1.LockInfo {
	t.Helper()
	h, err := e.client(t).ReadLock(ctx, workspace)
	if err != nil {
		t.Fatalf("reading the lock: %v", err)
	}
	return lockInfo(h)
}

// writes counts the PUT and DELETE requests for key so far.
func (e *cosLockEnv) writes(key string) (puts, deletes int) {
	for _, r := range e.srv.RequestLog() {
		if r.Path != "/"+key {
			continue
		}
		switch r.Method {
		case http.MethodPut:
			puts++
		case http.MethodDelete:
			deletes++
		}
	}
	return puts, deletes
}

func TestCosLockerAcquire(t *testing.T) {
	ctx := t.Context()
	for _, ws := range []string{"default", "staging"} {
		t.Run(ws+": free, taken with the object's ID", func(t *testing.T) {
			e := newCosLockEnv(t)
			info := newStateLockInfo(makeSlock().Obj(), slockNow)
			taken, holder, err := e.locker(t, ws).acquire(ctx, info)
			if err != nil || holder != nil || taken == nil {
				t.Fatalf("acquire() = %+v, %+v, %v; want taken", taken, holder, err)
			}
			on := e.holder(ctx, t, ws)
			if on == nil || taken.id != on.ID || on.Who != slockWho || on.Info != "release freeze" {
				t.Errorf("taken %q, the lock object holds %+v", taken.id, on)
			}
			if diff := cmp.Diff(*lockInfo(&info), taken.info); diff != "" {
				t.Errorf("taken info (-want +got):\n%s", diff)
			}
			other := map[string]string{"default": "staging", "staging": "default"}[ws]
			if h := e.holder(ctx, t, other); h != nil {
				t.Errorf("workspace %s is locked too: %+v", other, h)
			}
		})
	}

	t.Run("held by another: its holder, the object untouched", func(t *testing.T) {
		e := newCosLockEnv(t)
		alice := e.holdAlice(ctx, t, "default")
		puts, _ := e.writes(slockCosLockKey("default"))
		taken, holder, err := e.locker(t, "default").acquire(ctx, newStateLockInfo(makeSlock().Obj(), slockNow))
		if diff := cmp.Diff(alice, holder); diff != "" || taken != nil || err != nil {
			t.Errorf("acquire() = %+v, %+v, %v; want alice's lock (-want +got):\n%s", taken, holder, err, diff)
		}
		if after, _ := e.writes(slockCosLockKey("default")); after != puts {
			t.Errorf("%d PUTs of the lock object while it was held", after-puts)
		}
		if h := e.holder(ctx, t, "default"); h == nil || h.ID != alice.ID {
			t.Errorf("the lock object holds %+v, want alice's", h)
		}
	})
}

func TestCosLockerHolder(t *testing.T) {
	ctx := t.Context()
	for _, ws := range []string{"default", "staging"} {
		t.Run(ws, func(t *testing.T) {
			e := newCosLockEnv(t)
			other := map[string]string{"default": "staging", "staging": "default"}[ws]
			e.holdAlice(ctx, t, other)
			l := e.locker(t, ws)
			if h, err := l.holder(ctx); h != nil || err != nil {
				t.Errorf("holder() of a free lock (%s locked) = %+v, %v; want none", other, h, err)
			}
			taken, _, err := l.acquire(ctx, newStateLockInfo(makeSlock().Obj(), slockNow))
			if err != nil || taken == nil {
				t.Fatalf("acquire() = %+v, %v", taken, err)
			}
			h, err := e.locker(t, ws).holder(ctx)
			if err != nil || h == nil || h.ID != taken.id || h.Who != slockWho {
				t.Errorf("holder() = %+v, %v; want the StateLock's lock %s", h, err, taken.id)
			}
			if _, deletes := e.writes(slockCosLockKey(ws)); deletes != 0 {
				t.Errorf("holder() deleted the lock object")
			}
		})
	}
}

func TestCosLockerRelease(t *testing.T) {
	ctx := t.Context()
	t.Run("its own lock: released", func(t *testing.T) {
		e := newCosLockEnv(t)
		taken, _, err := e.locker(t, "staging").acquire(ctx, newStateLockInfo(makeSlock().Obj(), slockNow))
		if err != nil || taken == nil {
			t.Fatalf("acquire() = %+v, %v", taken, err)
		}
		if r, err := e.locker(t, "staging").release(ctx, *taken, true); err != nil || !r.released {
			t.Fatalf("release() = %+v, %v; want released", r, err)
		}
		if h := e.holder(ctx, t, "staging"); h != nil {
			t.Errorf("the lock is still held by %+v", h)
		}
	})
	t.Run("another's lock: left alone", func(t *testing.T) {
		e := newCosLockEnv(t)
		taken, _, err := e.locker(t, "default").acquire(ctx, newStateLockInfo(makeSlock().Obj(), slockNow))
		if err != nil || taken == nil {
			t.Fatalf("acquire() = %+v, %v", taken, err)
		}
		e.srv.DeleteObject(slockBucket, slockCosLockKey("default")) // a force unlock
		alice := e.holdAlice(ctx, t, "default")
		if r, err := e.locker(t, "default").release(ctx, *taken, true); err != nil || r.released || r.holder == nil || r.holder.ID != alice.ID {
			t.Errorf("release() = %+v, %v; want alice's lock reported as the holder: the StateLock's lock is gone", r, err)
		}
		if h := e.holder(ctx, t, "default"); h == nil || h.ID != alice.ID {
			t.Errorf("the lock object holds %+v, want alice's", h)
		}
		if _, deletes := e.writes(slockCosLockKey("default")); deletes != 0 {
			t.Errorf("%d DELETEs of the lock object", deletes)
		}
	})
	t.Run("no lock: nothing to release", func(t *testing.T) {
		e := newCosLockEnv(t)
		if r, err := e.locker(t, "default").release(ctx, heldLock{id: "0123456789abcdef0123456789abcdef"}, true); err != nil || r != (lockRelease{}) {
			t.Errorf("release() = %+v, %v; want nothing released and no holder", r, err)
		}
	})
}

// TestCosLockOperations runs a StateLock's operations in turn against the
// COS double, each with a new locker: a lock taken and not recorded (the
// manager stopped) is adopted, not waited for; a check keeps it; a lock
// lost to a force unlock and another writer is not taken back, and a
// release of the recorded lock leaves the other's alone.
func TestCosLockOperations(t *testing.T) {
	ctx := t.Context()
	e := newCosLockEnv(t)
	key := slockCosLockKey("default")
	sl := makeSlock().Obj()

	// Taken, and the result lost.
	if res := runSlockOp(ctx, t, e.locker(t, "default"), sl, slockHold); res.taken == nil {
		t.Fatalf("first hold = %+v, want taken", res)
	}
	first := e.holder(ctx, t, "default")
	res := runSlockOp(ctx, t, e.locker(t, "default"), sl, slockHold)
	if res.taken == nil || res.taken.id != first.ID || res.holder != nil {
		t.Fatalf("hold after a lost result = %+v, want its own lock %s adopted", res, first.ID)
	}
	applySlockResult(sl, res, slockBackend, everyKindsFailures)
	if sl.Status.LockID != first.ID {
		t.Fatalf("status records lock %q, want %s", sl.Status.LockID, first.ID)
	}
	recorded := sl.DeepCopy()
	if res := runSlockOp(ctx, t, e.locker(t, "default"), sl, slockHold); !res.kept {
		t.Errorf("check = %+v, want kept", res)
	}

	// terraform force-unlock, then a run takes the lock.
	e.srv.DeleteObject(slockBucket, key)
	alice := e.holdAlice(ctx, t, "default")
	puts, _ := e.writes(key)
	res = runSlockOp(ctx, t, e.locker(t, "default"), sl, slockHold)
	applySlockResult(sl, res, slockBackend, everyKindsFailures)
	if diff := cmp.Diff(alice, res.holder); diff != "" || !lockLost(sl) {
		t.Errorf("check after the loss = %+v, lockLost %v; want lost to alice (-want +got):\n%s", res, lockLost(sl), diff)
	}
	if after, _ := e.writes(key); after != puts {
		t.Errorf("the check wrote the lock object %d times", after-puts)
	}

	// A release of the lock it recorded: alice's lock stays.
	if res := runSlockOp(ctx, t, e.locker(t, "default"), recorded, slockRelease); res.released || res.err != nil || res.holder == nil || res.holder.ID != alice.ID {
		t.Errorf("release = %+v, want nothing released, alice named as the holder", res)
	}
	if h := e.holder(ctx, t, "default"); h == nil || h.ID != alice.ID {
		t.Errorf("the lock object holds %+v, want alice's", h)
	}
	if _, deletes := e.writes(key); deletes != 0 {
		t.Errorf("the operator deleted the lock object %d times", deletes)
	}
}
