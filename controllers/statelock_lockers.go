package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// stateLocker takes, reads and releases one workspace's lock for a
// StateLock, with the backend's own client and settings. Each backend
// kind's resolvedBackend builds one (locker).
type stateLocker interface {
	// acquire takes the lock with info. When another holds it, it returns
	// nil and the holder (nil when its lock information cannot be read).
	acquire(ctx context.Context, info stateclient.LockInfo) (*heldLock, *backendsv1alpha1.LockInfo, error)
	// holder reads the lock's holder, nil when the lock is free. It takes
	// nothing for good.
	holder(ctx context.Context) (*backendsv1alpha1.LockInfo, error)
	// release releases held, which holder has just reported, and nothing
	// else: a lock another took meanwhile is left alone.
	release(ctx context.Context, held heldLock) error
	// close releases the client's idle connections.
	close()
}

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

// httpLocker locks an HttpBackend's state through the http protocol.
type httpLocker struct {
	sc stateClient
	// check is the lock check that reads the holder (see checkHTTPLock):
	// its own lock ID, Who and Info.
	check httpProbeRun
}

func (h *httpLocker) acquire(ctx context.Context, info stateclient.LockInfo) (*heldLock, *backendsv1alpha1.LockInfo, error) {
	_, err := h.sc.Lock(ctx, info)
	var lockErr *stateclient.LockError
	switch {
	case err == nil:
		return &heldLock{id: info.ID, info: *lockInfo(&info)}, nil, nil
	case errors.As(err, &lockErr):
		return nil, lockInfo(lockErr.Info), nil
	}
	return nil, nil, err
}

// holder learns the holder as probe.lockCheck does: by taking the lock
// with the StateLock's own check ID, which a conflict answer refuses
// with the holder, and releasing it at once when it is free. Its own
// ID is never the StateLock's lock, so that a server that took a second
// LOCK with the holder's ID as a success could not make it release the
// lock it holds.
func (h *httpLocker) holder(ctx context.Context) (*backendsv1alpha1.LockInfo, error) {
	r := checkHTTPLock(ctx, h.sc, h.check)
	switch {
	case r.err != nil:
		return nil, r.err
	case r.ownErr != nil:
		return nil, fmt.Errorf("releasing the lock check's own lock: %w", r.ownErr)
	case !r.held:
		return nil, nil
	}
	return r.holder, nil
}

// release sends the UNLOCK Terraform's client sends: the LockInfo the
// lock was taken with. A server that refuses that body's form gets the
// force unlock forceUnlock.lockID sends (see releaseNamedLock); one that
// answers the lock is another's, or nobody's, has nothing of ours to
// release.
func (h *httpLocker) release(ctx context.Context, held heldLock) error {
	if err := h.sc.Resume(clientLockInfo(held.info)); err != nil {
		return err
	}
	err := h.sc.Unlock(ctx, held.id)
	var lockErr *stateclient.LockError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &lockErr) && (lockErr.Info == nil || lockErr.Info.ID != held.id):
		return nil
	case refusedStatus(err, held.id) != 0:
		return releaseNamedLock(ctx, h.sc, held.id)
	}
	return err
}

func (h *httpLocker) close() { h.sc.CloseIdleConnections() }

// cosLocker locks a CosBackend workspace's state through its .tflock
// object, as Terraform's cos backend does.
type cosLocker struct {
	cc        *cos.Client
	workspace string
}

func (c *cosLocker) acquire(ctx context.Context, info stateclient.LockInfo) (*heldLock, *backendsv1alpha1.LockInfo, error) {
	id, err := c.cc.AcquireLock(ctx, c.workspace, info)
	if heldErr, ok := errors.AsType[*cos.LockHeldError](err); ok {
		return nil, lockInfo(heldErr.Holder), nil
	}
	if err != nil {
		return nil, nil, err
	}
	return &heldLock{id: id, info: *lockInfo(&info)}, nil, nil
}

func (c *cosLocker) holder(ctx context.Context) (*backendsv1alpha1.LockInfo, error) {
	h, err := c.cc.ReadLock(ctx, c.workspace)
	if err != nil {
		return nil, err
	}
	return lockInfo(h), nil
}

func (c *cosLocker) release(ctx context.Context, held heldLock) error {
	err := c.cc.ReleaseLock(ctx, c.workspace, held.id)
	if errors.Is(err, cos.ErrLockNotHeld) {
		return nil
	}
	return err
}

func (c *cosLocker) close() {}
