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

func (c *cosLocker) release(ctx context.Context, held heldLock) error {
	err := c.cc.ReleaseLock(ctx, c.workspace, held.id)
	if errors.Is(err, cos.ErrLockNotHeld) {
		return nil
	}
	return err
}

func (c *cosLocker) close() {}
