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
	// holder reads the lock's holder, nil when the lock is free. It takes
	// nothing for good.
	holder(ctx context.Context) (*backendsv1alpha1.LockInfo, error)
	// release releases held, which holder has just reported, and nothing
	// else: a lock another took meanwhile is left alone.
	release(ctx context.Context, held heldLock) error
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
