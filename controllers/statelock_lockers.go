package controllers

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// errLockingDisabled is the locker of an HttpBackend without lockAddress
// or unlockAddress: its state cannot be locked.
var errLockingDisabled = errors.New("the backend has no lockAddress or unlockAddress, so its state cannot be locked")

// slockOperation is one lock operation of a StateLock, built by the
// reconcile and run by the prober.
type slockOperation struct {
	action slockAction
	// held is the lock the status records, "" id when none.
	held heldLock
	// take is the LockInfo to take the lock with (hold, when none is
	// held).
	take stateclient.LockInfo
	// owns reports whether a holder is the StateLock's own lock (see
	// ownsLock).
	owns func(*backendsv1alpha1.LockInfo) bool
}

// run performs op with l within probeTimeout.
func (op slockOperation) run(ctx context.Context, l stateLocker) slockResult {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	defer l.close()
	res := slockResult{action: op.action}
	switch {
	case op.action == slockHold && op.held.id == "":
		res.taken, res.holder, res.err = l.acquire(ctx, op.take)
		if res.taken == nil && res.err == nil && op.owns(res.holder) {
			// A lock this StateLock took without recording it: its own.
			res.taken, res.holder = &heldLock{id: res.holder.ID, info: *res.holder}, nil
		}
	case op.action == slockHold:
		h, err := l.holder(ctx)
		res.err = err
		res.kept = err == nil && op.owns(h)
		if err == nil && !res.kept {
			res.holder = h
		}
	case op.action == slockRelease:
		res.released, res.holder, res.err = releaseOwned(ctx, l, op)
	}
	return res
}

// releaseOwned releases the StateLock's lock after checking that the
// holder is still its own, and reports whether it released one; a lock
// another holds (returned), or none, is left alone.
func releaseOwned(ctx context.Context, l stateLocker, op slockOperation) (bool, *backendsv1alpha1.LockInfo, error) {
	h, err := l.holder(ctx)
	switch {
	case err != nil:
		return false, nil, err
	case !op.owns(h):
		return false, h, nil
	}
	held := op.held
	if held.id == "" {
		// A lock taken and never recorded (see ownsLock).
		held = heldLock{id: h.ID, info: *h}
	}
	if err := l.release(ctx, held); err != nil {
		return false, nil, err
	}
	return true, nil, nil
}

// newStateLockInfo is the LockInfo a StateLock takes its lock with: a
// fresh ID, Who naming the StateLock, Info its reason, Created now to the
// second (so that status.lockInfo, in whole seconds, gives back the very
// body the lock was taken with).
func newStateLockInfo(sl *backendsv1alpha1.StateLock, now time.Time) stateclient.LockInfo {
	return stateclient.LockInfo{
		ID: uuid.NewString(), Operation: lockCheckOperation, Info: sl.Spec.Reason,
		Who: stateLockWho(sl), Created: now.UTC().Truncate(time.Second),
	}
}

// clientLockInfo is the stateclient form of a LockInfo from status.
func clientLockInfo(l backendsv1alpha1.LockInfo) stateclient.LockInfo {
	out := stateclient.LockInfo{ID: l.ID, Operation: l.Operation, Info: l.Info, Who: l.Who, Version: l.Version, Path: l.Path}
	if l.Created != nil {
		out.Created = l.Created.UTC()
	}
	return out
}
