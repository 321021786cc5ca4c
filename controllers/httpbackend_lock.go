package controllers

import (
	"context"
	"errors"
	"fmt"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

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
