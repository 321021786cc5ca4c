package controllers

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// The functions of this file are pure: they decide what a backend's
// Locked condition and status.lock say, for both kinds, and are
// table-tested.

// lockReading is what one probe learned of a backend's lock. The probes of
// both kinds fill one in; lockStatus turns it into status.
type lockReading struct {
	// err is set when the lock could not be read: whether it is held, and
	// by whom, is unknown.
	err error
	// held is true when the lock is held. holder describes the holder, nil
	// when its lock information cannot be read.
	held   bool
	holder *backendsv1alpha1.LockInfo
	// ownErr is set when the holder is the operator's own lock check,
	// which took the lock and could not release it.
	ownErr error
	// released is true when the probe released holder (forceUnlock named
	// it, or goneRelease): the state is no longer locked. releaseErr is set
	// when it tried and failed.
	released   bool
	releaseErr error
	// goneRelease is true when the release was lockPolicy's, of a holder
	// whose Pod (sighting.pod) has been gone for the grace period.
	goneRelease bool
	// sighting is what lockPolicy.releaseWhenHolderGone saw of the
	// holder's Pod (see holderCheck).
	sighting holderSighting
}

// lockVerdict is what status says of a lock after a probe.
type lockVerdict struct {
	// obs is the Locked condition.
	obs conditions.Observation
	// known is false when the probe learned nothing of the holder: then
	// status.lock keeps the last holder seen.
	known bool
	// holder is status.lock when known: nil when the state is not locked.
	holder *backendsv1alpha1.LockInfo
	// holderPod is status.holderPod when known: the record of holder's
	// Pod, nil when none.
	holderPod *backendsv1alpha1.HolderPod
}

// lockStatus decides the Locked condition, status.lock and
// status.holderPod from a reading and the terms of the spec. A failed read
// is not a release: Locked becomes Unknown and status.lock and
// status.holderPod keep what was last seen, so that no LockReleased event
// is emitted for it. A held lock says how long it has been held (see
// lockAge), and is StaleLock past lockPolicy.staleAfter; a lock whose
// release failed, or that is the operator's own, keeps its failure's
// reason.
func lockStatus(r lockReading, t lockTerms) lockVerdict {
	switch {
	case r.err != nil:
		obs := probeFailure(t.failures, r.err)
		obs.Status = metav1.ConditionUnknown
		obs.Message = "The lock cannot be read, so whether the state is locked is unknown: " + obs.Message
		return lockVerdict{obs: obs}
	case r.ownErr != nil:
		return lockVerdict{known: true, holder: r.holder, obs: conditions.Observation{
			Status: metav1.ConditionTrue, Reason: backendsv1alpha1.LockCheckNotReleasedReason,
			Message: fmt.Sprintf("%s It is the operator's own lock check, which could not release it (%v); the next probe releases it, and a run started meanwhile meets it.",
				describeHolder(r.holder), r.ownErr),
		}}
	case r.released && r.goneRelease:
		return lockVerdict{known: true, obs: conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.HolderGoneReleasedReason,
			Message: fmt.Sprintf("The state is not locked. Released lock %s held by %s: its Pod %s had been %s since %s, longer than lockPolicy.gracePeriod (%s).",
				r.holder.ID, r.holder.Who, r.sighting.pod.Name, podDoneAs(r.sighting.pod.Phase),
				r.sighting.pod.GoneSince.UTC().Format(time.RFC3339), t.grace)}}
	case r.released:
		return lockVerdict{known: true, obs: conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.ForceUnlockedReason,
			Message: fmt.Sprintf("The state is not locked. Released lock %s held by %s, as forceUnlock.lockID asked.", r.holder.ID, r.holder.Who)}}
	case r.releaseErr != nil:
		obs := probeFailure(t.failures, r.releaseErr)
		if _, refused := errors.AsType[*forceUnlockRefusedError](r.releaseErr); refused {
			obs.Reason = backendsv1alpha1.ForceUnlockRefusedReason
		}
		what := "Force unlock"
		if r.goneRelease {
			what = "The release (its holder's Pod is gone)"
		}
		obs.Status = metav1.ConditionTrue
		obs.Message = fmt.Sprintf("%s%s %s of %s failed: %s; it is tried again at the next probe.",
			describeHolder(r.holder), holderNote(r.sighting, t.grace), what, r.holder.ID, obs.Message)
		return lockVerdict{known: true, holder: r.holder, holderPod: r.sighting.pod, obs: obs}
	case r.held:
		reason := backendsv1alpha1.LockHeldReason
		if t.forceUnlockID != "" {
			reason = backendsv1alpha1.ForceUnlockSkippedReason
		}
		message := describeHolder(r.holder)
		if r.holder != nil {
			if staleLock(r.holder.Created, t.now, t.staleAfter) {
				reason = backendsv1alpha1.StaleLockReason
			}
			message += lockAge(r.holder.Created, t.now, t.staleAfter)
		}
		return lockVerdict{known: true, holder: r.holder, holderPod: r.sighting.pod, obs: conditions.Observation{Status: metav1.ConditionTrue, Reason: reason,
			Message: message + holderNote(r.sighting, t.grace) + forceUnlockNote(t.forceUnlockID, r.holder)}}
	}
	return lockVerdict{known: true, obs: conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.NotLockedReason,
		Message: "The state is not locked." + forceUnlockNote(t.forceUnlockID, nil)}}
}

// forceUnlockNote says why forceUnlock left the lock alone, or "" when it
// names no lock.
func forceUnlockNote(id string, holder *backendsv1alpha1.LockInfo) string {
	switch {
	case id == "":
		return ""
	case holder == nil:
		return fmt.Sprintf(" forceUnlock.lockID %s: no lock is held, nothing to release.", id)
	case holder.ID == "":
		return fmt.Sprintf(" forceUnlock.lockID %s: the holder's ID cannot be read, so the lock is left alone.", id)
	default:
		return fmt.Sprintf(" forceUnlock.lockID %s does not match the holder %s, so the lock is left alone.", id, holder.ID)
	}
}

// forceUnlockRefusedError reports a server that refused every way of
// releasing a named lock, with the status code of each answer.
type forceUnlockRefusedError struct {
	// idBody and emptyBody are the status codes of the answers to the
	// UNLOCK with the ID body and to the one with an empty body; 0 when
	// that UNLOCK was not sent.
	idBody, emptyBody int
}

func (e *forceUnlockRefusedError) Error() string {
	if e.emptyBody == 0 {
		return fmt.Sprintf("the server refused the unlock naming the ID with HTTP %d", e.idBody)
	}
	return fmt.Sprintf("the server refused the unlock naming the ID with HTTP %d and Terraform's empty-body unlock with HTTP %d",
		e.idBody, e.emptyBody)
}

// refusedStatus is the status code of an answer that refused an UNLOCK,
// or 0 when err is not such an answer: a transport error, an
// authentication failure, or a conflict naming another holder is not a
// refusal of the body's form. named is the lock ID the UNLOCK named.
func refusedStatus(err error, named string) int {
	if lockErr, ok := errors.AsType[*stateclient.LockError](err); ok {
		// A conflict that still names the lock we asked to release: the
		// server did not take the body as that lock's.
		if lockErr.Info != nil && lockErr.Info.ID == named {
			return lockErr.StatusCode
		}
		return 0
	}
	var status *stateclient.StatusError
	if !errors.As(err, &status) {
		return 0
	}
	switch status.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return 0
	}
	return status.StatusCode
}
