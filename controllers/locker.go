package controllers

import (
	"context"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// stateLocker takes, reads and releases one workspace's lock for a
// StateLock, with the backend's own client and settings. Each backend
// kind's resolvedBackend builds one (locker).
type stateLocker interface {
	// acquire takes the lock with info. When another holds it, it returns
	// nil and the holder (nil when its lock information cannot be read).
	acquire(ctx context.Context, info stateclient.LockInfo) (*heldLock, *backendsv1alpha1.LockInfo, error)
	// holder reads the lock's holder, nil when the lock is free or the
	// server does not report it. It takes nothing for good.
	holder(ctx context.Context) (*backendsv1alpha1.LockInfo, error)
	// check reports whether held, the StateLock's lock, is still held, as
	// far as the server lets the operator tell (see lockCheck).
	check(ctx context.Context, held heldLock) (lockCheck, error)
	// release releases held, the StateLock's own lock, and nothing else:
	// a lock another took meanwhile is left alone. noLossSeen is true
	// while nothing has shown that the lock was lost: on a server where
	// nothing else can confirm the holder, the release is sent only then.
	release(ctx context.Context, held heldLock, noLossSeen bool) (lockRelease, error)
	// close releases the client's idle connections.
	close()
}

// heldLock is a lock a StateLock holds.
type heldLock struct {
	// id is the lock's ID as the backend reports it.
	id string
	// info is the LockInfo written when the lock was taken.
	info backendsv1alpha1.LockInfo
}

// lockCheck is what a StateLock's check of its lock learned.
type lockCheck struct {
	// kept is true when the lock is still the StateLock's.
	kept bool
	// unknown is true when nothing on this server tells whose the lock
	// is (its conflicts name no holder, and a LOCK again under the
	// StateLock's ID is refused): the lock is kept as held.
	unknown bool
	// why says, when unknown, what kept the check from telling.
	why string
	// holder is the holder found instead, when the lock is not kept: nil
	// when the lock is free or the holder is not reported.
	holder *backendsv1alpha1.LockInfo
}

// lockRelease is what a StateLock's release of its lock did.
type lockRelease struct {
	// released is true when the lock was the StateLock's and is released.
	released bool
	// holder is the holder found instead when another holds the lock: the
	// StateLock's was released or taken before.
	holder *backendsv1alpha1.LockInfo
	// withheld, when set, says why the lock, which may still be the
	// StateLock's, was not released: the server allows no release the
	// operator can make safe (see conformance.ReleasePlan), or it refused
	// the release with an answer that names no other holder.
	withheld string
}
