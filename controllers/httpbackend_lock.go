package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/conformance"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// httpLocker locks an HttpBackend's state through the http protocol, as
// the state server's features allow (see conformance.Decide).
type httpLocker struct {
	sc stateClient
	// checkRun is the lock check that reads the holder (see
	// checkHTTPLock): its own lock ID, Who and Info.
	checkRun httpProbeRun
	// features are what the server lets each lock feature do.
	features conformance.Features
}

func (h *httpLocker) acquire(ctx context.Context, info stateclient.LockInfo) (*heldLock, *backendsv1alpha1.LockInfo, error) {
	_, err := h.sc.Lock(ctx, info)
	var lockErr *stateclient.LockError
	switch {
	case err == nil:
		return &heldLock{id: info.ID, info: *lockInfo(&info)}, nil, nil
	case errors.As(err, &lockErr):
		return nil, holderOf(lockErr, h.features.LockCheck, info), nil
	}
	return nil, nil, err
}

// holder learns the holder as probe.lockCheck does: by taking the lock
// with the StateLock's own check ID, which a conflict answer refuses
// with the holder, and releasing it at once when it is free. Its own
// ID is never the StateLock's lock, so that a server that took a second
// LOCK with the holder's ID as a success could not make it release the
// lock it holds. A holder the server does not report is nil.
func (h *httpLocker) holder(ctx context.Context) (*backendsv1alpha1.LockInfo, error) {
	r := checkHTTPLock(ctx, h.sc, h.checkRun, h.features)
	switch {
	case r.skip != nil:
		return nil, errors.New(r.skip.Message)
	case r.err != nil:
		return nil, r.err
	case r.ownErr != nil:
		return nil, fmt.Errorf("releasing the lock check's own lock: %w", r.ownErr)
	case !r.held:
		return nil, nil
	}
	return r.holder, nil
}

// check tells whether held is still the StateLock's lock, as the server
// allows: from the holder a conflict names; from a LOCK again under the
// StateLock's own ID and body, where the server answers it 200 (a lock
// found free is then the StateLock's again); or not at all, on a server
// where nothing tells (unknown, never lost).
func (h *httpLocker) check(ctx context.Context, held heldLock) (lockCheck, error) {
	switch h.features.Ownership.By {
	case conformance.OwnershipByHolder:
		return heldBy(checkHTTPLock(ctx, h.sc, h.checkRun, h.features), held)
	case conformance.OwnershipByReentrantLock:
		again := clientLockInfo(held.info)
		_, err := h.sc.Lock(ctx, again)
		if lockErr, ok := errors.AsType[*stateclient.LockError](err); ok {
			return lockCheck{holder: holderOf(lockErr, h.features.LockCheck, again)}, nil
		}
		return lockCheck{kept: err == nil}, err
	}
	return lockCheck{unknown: true, why: h.features.Ownership.Reason}, nil
}

// heldBy is what the lock check's reading r tells of held: kept while the
// holder it names is held, lost to the holder it names otherwise, free
// when it got the lock, and unknown when it names no holder or was not
// run (r.skip). A failed check, or its own lock left behind, is an error.
func heldBy(r lockReading, held heldLock) (lockCheck, error) {
	switch {
	case r.skip != nil:
		return lockCheck{unknown: true, why: r.skip.Message}, nil
	case r.err != nil:
		return lockCheck{}, r.err
	case r.ownErr != nil:
		return lockCheck{}, fmt.Errorf("releasing the lock check's own lock: %w", r.ownErr)
	case !r.held:
		return lockCheck{}, nil
	case r.holder == nil || r.holder.ID == "":
		// Held, by a holder the conflict does not name: nothing says the
		// lock is not the StateLock's.
		return lockCheck{unknown: true, why: "the server's conflict named no holder"}, nil
	case r.holder.ID == held.id:
		return lockCheck{kept: true}, nil
	}
	return lockCheck{holder: r.holder}, nil
}

// release sends the UNLOCK the server releases the StateLock's lock with
// (the LockInfo it was taken with, whenever the server takes it), once
// what the server's release plan guards holds: a body that could release
// another holder's lock is sent only right after a conflict named the
// StateLock's lock, or a LOCK again under its ID succeeded, or, where
// nothing can confirm the holder, while nothing has shown the lock lost.
// A lock another holds is left alone.
func (h *httpLocker) release(ctx context.Context, held heldLock, noLossSeen bool) (lockRelease, error) {
	plan := h.features.Release
	if !plan.Allowed {
		return lockRelease{withheld: plan.Reason}, nil
	}
	switch plan.Guard {
	case conformance.GuardHolderRead, conformance.GuardReentrantLock:
		c, err := h.check(ctx, held)
		switch {
		case err != nil:
			return lockRelease{}, err
		case c.unknown:
			return lockRelease{withheld: "the server did not tell whose the lock is (" + c.why + "), and its UNLOCK may release another holder's"}, nil
		case !c.kept:
			return lockRelease{holder: c.holder}, nil
		}
	case conformance.GuardNoLossSeen:
		if !noLossSeen {
			return lockRelease{withheld: "the lock may have been released and taken by another since, and this server's UNLOCK " +
				"releases whatever lock is held: nothing can confirm that the lock is still the StateLock's"}, nil
		}
	}
	sent := clientLockInfo(held.info)
	err := releaseOwn(ctx, h.sc, sent, plan.Body)
	status, refused := unlockRefusal(err)
	lockErr, _ := errors.AsType[*stateclient.LockError](err)
	switch {
	case err == nil:
		return lockRelease{released: true}, nil
	case !refused:
		return lockRelease{}, err
	case lockErr != nil && lockErr.Info != nil && lockErr.Info.ID != "" && lockErr.Info.ID != held.id && h.features.LockCheck.HolderKnown:
		// Another holds the lock: the StateLock's was released before.
		return lockRelease{holder: holderOf(lockErr, h.features.LockCheck, sent)}, nil
	}
	// Refused without naming another holder: the lock is no one's, or the
	// server did not take the body as the lock's. The lock check tells
	// which: a lock it gets was free; a conflict may name the holder.
	// Elsewhere the lock may still be the StateLock's.
	if plan.RefusalMeansNotHeld {
		var holder *backendsv1alpha1.LockInfo
		if lockErr != nil {
			holder = holderOf(lockErr, h.features.LockCheck, sent)
		}
		return lockRelease{holder: holder}, nil
	}
	refusal := lockRelease{withheld: "the server refused its UNLOCK (" + answerText(status) + ")"}
	if !h.features.LockCheck.Allowed {
		return refusal, nil
	}
	switch c, err := heldBy(checkHTTPLock(ctx, h.sc, h.checkRun, h.features), held); {
	case err != nil:
		return lockRelease{}, err
	case c.holder != nil:
		return lockRelease{holder: c.holder}, nil
	case !c.kept && !c.unknown:
		// Free: the refused UNLOCK had nothing of the StateLock's to
		// release.
		return lockRelease{}, nil
	}
	return refusal, nil
}

func (h *httpLocker) close() { h.sc.CloseIdleConnections() }

// unlockRefusal tells whether err is a state server's refusal of an
// UNLOCK's body, with the answer's status: a lock conflict (409, 423), or
// an answer that rejects the body itself (400, 412, 422), as servers that
// release only on the exact LockInfo give to any other body. Sending the
// same body again gets the same answer, so it is not a failure to retry.
func unlockRefusal(err error) (int, bool) {
	if lockErr, ok := errors.AsType[*stateclient.LockError](err); ok {
		return lockErr.StatusCode, true
	}
	if statusErr, ok := errors.AsType[*stateclient.StatusError](err); ok {
		switch statusErr.StatusCode {
		case http.StatusBadRequest, http.StatusPreconditionFailed, http.StatusUnprocessableEntity:
			return statusErr.StatusCode, true
		}
	}
	return 0, false
}
