package controllers

import (
	"context"
	"errors"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

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

// check reads the .tflock object: the lock is kept while it names held.
func (c *cosLocker) check(ctx context.Context, held heldLock) (lockCheck, error) {
	h, err := c.holder(ctx)
	switch {
	case err != nil:
		return lockCheck{}, err
	case h != nil && h.ID == held.id:
		return lockCheck{kept: true}, nil
	}
	return lockCheck{holder: h}, nil
}

// release deletes the .tflock object while it names held (see
// cos.Client.ReleaseLock); a lock another holds is left alone.
func (c *cosLocker) release(ctx context.Context, held heldLock, _ bool) (lockRelease, error) {
	err := c.cc.ReleaseLock(ctx, c.workspace, held.id)
	if errors.Is(err, cos.ErrLockNotHeld) {
		h, readErr := c.holder(ctx)
		if readErr != nil {
			return lockRelease{}, readErr
		}
		return lockRelease{holder: h}, nil
	}
	if err != nil {
		return lockRelease{}, err
	}
	return lockRelease{released: true}, nil
}

func (c *cosLocker) close() {}
