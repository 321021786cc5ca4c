package controllers

import (
	"context"
	"errors"
	"fmt"
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
	// noLossSeen is true while nothing has shown that the held lock was
	// lost: a server that cannot confirm the holder gets its release only
	// then (see stateLocker.release).
	noLossSeen bool
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
		c, err := l.check(ctx, op.held)
		res.err = err
		res.kept, res.unknown, res.why = c.kept, c.unknown, c.why
		if err == nil && !c.kept && !c.unknown {
			res.holder = c.holder
		}
	case op.action == slockRelease:
		var r lockRelease
		r, res.err = releaseOwned(ctx, l, op)
		res.released, res.holder, res.withheld = r.released, r.holder, r.withheld
	}
	return res
}

// releaseOwned releases the StateLock's lock as its locker allows (see
// stateLocker.release). A lock taken and never recorded is first found by
// its holder (see ownsLock); a lock another holds, or none, is left alone.
func releaseOwned(ctx context.Context, l stateLocker, op slockOperation) (lockRelease, error) {
	held := op.held
	if held.id == "" {
		h, err := l.holder(ctx)
		switch {
		case err != nil:
			return lockRelease{}, err
		case !op.owns(h):
			return lockRelease{holder: h}, nil
		}
		held = heldLock{id: h.ID, info: *h}
	}
	return l.release(ctx, held, op.noLossSeen)
}

// newStateLockInfo is the LockInfo a StateLock takes its lock with: the
// ID of stateLockID, Who naming the StateLock, Info its reason, Created
// now to the second (so that status.lockInfo, in whole seconds, gives back
// the very body the lock was taken with).
func newStateLockInfo(sl *backendsv1alpha1.StateLock, now time.Time) stateclient.LockInfo {
	return stateclient.LockInfo{
		ID: stateLockID(sl), Operation: lockCheckOperation, Info: sl.Spec.Reason,
		Who: stateLockWho(sl), Created: now.UTC().Truncate(time.Second),
	}
}

// stateLockNamespace derives the IDs of StateLocks' locks (see
// stateLockID).
var stateLockNamespace = uuid.MustParse("b7e3f0a4-5c1d-4e8b-9f62-3a0d7c15e948")

// stateLockID is the ID of the lock sl takes: a function of the object
// (its UID), its generation and its reacquire annotation, so that a lock
// it took and could not record is recognised as its own by its ID alone,
// on a server that rewrites Who (GitLab) as on any other; and a lock
// taken again after a loss (a spec change, a new reacquire value) has a
// new ID, which a forceUnlock.lockID left in a manifest does not name.
func stateLockID(sl *backendsv1alpha1.StateLock) string {
	key := fmt.Sprintf("%s/%d/%s", sl.UID, sl.Generation, sl.Annotations[backendsv1alpha1.ReacquireAnnotation])
	return uuid.NewSHA1(stateLockNamespace, []byte(key)).String()
}

// clientLockInfo is the stateclient form of a LockInfo from status.
func clientLockInfo(l backendsv1alpha1.LockInfo) stateclient.LockInfo {
	out := stateclient.LockInfo{ID: l.ID, Operation: l.Operation, Info: l.Info, Who: l.Who, Version: l.Version, Path: l.Path}
	if l.Created != nil {
		out.Created = l.Created.UTC()
	}
	return out
}
