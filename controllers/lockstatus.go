package controllers

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/conformance"
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
	// named is the lock ID a release was asked for (forceUnlock), which
	// messages name when the server does not report the holder.
	named string
	// skip, when set, is the Locked condition of a lock the probe did not
	// read, and why (the server's behaviour not known yet, a feature the
	// server does not support): status.lock keeps the last holder seen.
	skip *conditions.Observation
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
	case r.skip != nil:
		return lockVerdict{obs: *r.skip}
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
	case r.released && r.holder == nil:
		return lockVerdict{known: true, obs: conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.ForceUnlockedReason,
			Message: fmt.Sprintf("The state is not locked. Released lock %s, as forceUnlock.lockID asked: the server checks the ID an UNLOCK names.", r.named)}}
	case r.released:
		return lockVerdict{known: true, obs: conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.ForceUnlockedReason,
			Message: fmt.Sprintf("The state is not locked. Released lock %s held by %s, as forceUnlock.lockID asked.", r.holder.ID, r.holder.Who)}}
	case r.releaseErr != nil && r.holder == nil:
		if notHeld, ok := errors.AsType[*namedLockNotHeldError](r.releaseErr); ok {
			return lockVerdict{known: true, obs: conditions.Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.ForceUnlockSkippedReason,
				Message: fmt.Sprintf("The state is locked by a holder the server does not report. forceUnlock.lockID %s is not it: %v, so the lock is left alone.",
					r.named, notHeld)}}
		}
		obs := releaseFailure(t.failures, r.releaseErr)
		obs.Status = metav1.ConditionTrue
		obs.Message = fmt.Sprintf("The state is locked by a holder the server does not report. Force unlock %s failed: %s", r.named, obs.Message)
		return lockVerdict{known: true, obs: obs}
	case r.releaseErr != nil:
		obs := releaseFailure(t.failures, r.releaseErr)
		what := "Force unlock"
		if r.goneRelease {
			what = "The release (its holder's Pod is gone)"
		}
		obs.Status = metav1.ConditionTrue
		obs.Message = fmt.Sprintf("%s%s %s of %s failed: %s",
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

// releaseFailure is the Locked condition of a named lock that a release
// could not release, tried again at the next probe: ForceUnlockRefused
// when the server refused the UNLOCK, ForceUnlockUnsupported when the
// server does not allow releasing only the named lock (never tried),
// else the failure's own reason.
func releaseFailure(failures []failureClass, err error) conditions.Observation {
	if unsupported, ok := errors.AsType[*forceUnlockUnsupportedError](err); ok {
		return conditions.Observation{Reason: backendsv1alpha1.ForceUnlockUnsupportedReason,
			Message: unsupported.Error() + ". Release it on the server's side, or with the client it supports; nothing was sent."}
	}
	obs := probeFailure(failures, err)
	if _, refused := errors.AsType[*forceUnlockRefusedError](err); refused {
		obs.Reason = backendsv1alpha1.ForceUnlockRefusedReason
	}
	obs.Message += "; it is tried again at the next probe."
	return obs
}

// forceUnlockRefusedError reports a server that refused the UNLOCK that
// releases a named lock on it, with the body's form and the answer's
// status code.
type forceUnlockRefusedError struct {
	body   conformance.UnlockBody
	status int
}

func (e *forceUnlockRefusedError) Error() string {
	return fmt.Sprintf("the server refused the UNLOCK with %s with HTTP %d", bodyPhrases[e.body], e.status)
}

// bodyPhrases name each form of UNLOCK body in messages.
var bodyPhrases = map[conformance.UnlockBody]string{
	conformance.BodyExact: "the holder's exact LockInfo",
	conformance.BodyID:    "a body naming the ID",
	conformance.BodyEmpty: "an empty body (Terraform's force-unlock)",
}

// namedLockNotHeldError reports a server that checks the ID an UNLOCK
// names and answered that the named lock is not the one held: nothing
// was released.
type namedLockNotHeldError struct {
	id     string
	status int
}

func (e *namedLockNotHeldError) Error() string {
	return fmt.Sprintf("the server refused to release it (%s): it checks the ID an UNLOCK names", answerText(e.status))
}

// forceUnlockUnsupportedError reports a server on which the operator
// cannot release only a named lock (see conformance.NamedUnlockPlan):
// nothing was sent.
type forceUnlockUnsupportedError struct {
	plan conformance.NamedUnlockPlan
}

func (e *forceUnlockUnsupportedError) Error() string {
	return fmt.Sprintf("The operator cannot release only the named lock on this state server: %s (see status.server). "+
		"Instead, %s; %s", e.plan.Reason, e.plan.Terraform, e.plan.OpenTofu)
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

// answerText names an HTTP status in a message: "HTTP 409 Conflict".
func answerText(status int) string {
	if status == 0 {
		return "no answer"
	}
	return fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
}
