package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
)

// The functions of this file are pure: they decide what a StateLock does
// next and what its status says, and are table-tested.

// slockAction is what a StateLock does on the server.
type slockAction int

const (
	// slockIdle touches nothing: the lock was lost (until the user asks
	// again) or expired and released.
	slockIdle slockAction = iota
	// slockHold takes the lock when the StateLock holds none, and checks
	// that it still holds it otherwise.
	slockHold
	// slockRelease releases the lock the StateLock holds (it expired, or
	// the StateLock is deleted).
	slockRelease
)

func (a slockAction) String() string {
	switch a {
	case slockHold:
		return "hold"
	case slockRelease:
		return "release"
	}
	return "idle"
}

// stateLockWho is the Who of a StateLock's LockInfo: whoever meets the
// lock learns which object holds it.
func stateLockWho(sl *backendsv1alpha1.StateLock) string {
	return "backend-operator/" + sl.Namespace + "/" + sl.Name
}

// expired reports whether sl's spec.until has passed at now.
func expired(sl *backendsv1alpha1.StateLock, now time.Time) bool {
	return sl.Spec.Until != nil && !now.Before(sl.Spec.Until.Time)
}

// lockLost reports whether sl lost its lock and must not take it again:
// LockLost was recorded for this generation, and the reacquire annotation
// has no value the controller has not acted on yet.
func lockLost(sl *backendsv1alpha1.StateLock) bool {
	c := meta.FindStatusCondition(sl.Status.Conditions, backendsv1alpha1.LockedCondition)
	return c != nil && c.Reason == backendsv1alpha1.LockLostReason && c.ObservedGeneration == sl.Generation &&
		reacquireRecord(sl.Annotations[backendsv1alpha1.ReacquireAnnotation]) == sl.Status.ReacquireRequest
}

// maxReacquireRequest is the MaxLength of status.reacquireRequest.
const maxReacquireRequest = 256

// reacquireDigestPrefix starts the digest form of a reacquire value (see
// reacquireRecord).
const reacquireDigestPrefix = "sha256:"

// reacquireRecord is the form of a reacquire annotation value that
// status.reacquireRequest records and lockLost compares: the value itself
// when status can hold it, and otherwise "sha256:" and the hex SHA-256 of
// the value, 71 characters, so that no annotation makes a status write
// fail (an annotation can be far longer than the field). A short value
// that starts with "sha256:" is digested too, so that it never reads as
// the record of the long value it spells.
func reacquireRecord(value string) string {
	if len(value) <= maxReacquireRequest && !strings.HasPrefix(value, reacquireDigestPrefix) {
		return value
	}
	sum := sha256.Sum256([]byte(value))
	return reacquireDigestPrefix + hex.EncodeToString(sum[:])
}

// releaseWithheld reports whether the release of sl's lock at expiry was
// withheld (see slockResult.withheld): it is not tried again, and the
// lock stays recorded until a user releases it.
func releaseWithheld(sl *backendsv1alpha1.StateLock) bool {
	c := meta.FindStatusCondition(sl.Status.Conditions, backendsv1alpha1.LockedCondition)
	return c != nil && c.Reason == backendsv1alpha1.LockNotReleasedReason
}

// lockStall is the stall of a StateLock whose lock needs its user: lost
// (LockLost, see lockLost) or not released at expiry (LockNotReleased, see
// releaseWithheld), with the Locked condition's message; nil otherwise.
func lockStall(sl *backendsv1alpha1.StateLock) error {
	c := meta.FindStatusCondition(sl.Status.Conditions, backendsv1alpha1.LockedCondition)
	switch {
	case lockLost(sl):
		return conditions.Stall(backendsv1alpha1.LockLostReason, "%s", c.Message)
	case releaseWithheld(sl):
		return conditions.Stall(backendsv1alpha1.LockNotReleasedReason, "%s", c.Message)
	}
	return nil
}

// planStateLock decides what a StateLock that is not being deleted does at
// now: release the lock once until has passed, nothing while the lock is
// lost, and otherwise hold it (take it, or check it is still held).
func planStateLock(sl *backendsv1alpha1.StateLock, now time.Time) slockAction {
	switch {
	case expired(sl, now):
		if sl.Status.LockID != "" && !releaseWithheld(sl) {
			return slockRelease
		}
		return slockIdle
	case sl.Status.LockID == "" && lockLost(sl):
		return slockIdle
	}
	return slockHold
}

// slockResult is what one lock operation of a StateLock learned.
type slockResult struct {
	// action is the operation that ran.
	action slockAction
	// taken is the lock the operation took (or found it had taken before
	// and not recorded): the StateLock now holds it.
	taken *heldLock
	// kept is true when a check found the lock still held by the
	// StateLock.
	kept bool
	// unknown is true when a check could not tell whose the lock is (the
	// server names no holder): the StateLock keeps it as held. why says
	// what kept the check from telling.
	unknown bool
	why     string
	// holder is the lock's holder when it is another: the one a take
	// waits for, or the one a check found instead of the StateLock.
	holder *backendsv1alpha1.LockInfo
	// released is true when a release released the StateLock's lock.
	// A release that found the lock no longer its own (holder, or none)
	// released nothing: the StateLock holds nothing either way.
	released bool
	// withheld, when set, says why a release did not release a lock that
	// may still be the StateLock's (see lockRelease.withheld).
	withheld string
	// err is set when the server could not be asked: what the StateLock
	// holds is unknown, and the operation is tried again.
	err error
}

// applySlockResult writes what a lock operation learned into sl's status
// and its Locked condition, and records a lost lock as acted on (see
// lockLost). backend names the backend in messages; failures are the
// failure classes of its kind's client (see classifyFailure).
func applySlockResult(sl *backendsv1alpha1.StateLock, res slockResult, backend string, failures []failureClass) {
	st := &sl.Status
	set := func(o conditions.Observation) {
		conditions.Set(&st.Conditions, sl.Generation, backendsv1alpha1.LockedCondition, o)
	}
	switch {
	case res.err != nil:
		obs := probeFailure(failures, res.err)
		obs.Status = metav1.ConditionUnknown
		switch res.action {
		case slockRelease:
			obs.Message = fmt.Sprintf("Cannot release lock %s of %s, tried again shortly: %s", st.LockID, backend, obs.Message)
		case slockHold:
			if st.LockID != "" {
				obs.Message = fmt.Sprintf("Cannot check that lock %s of %s is still held, tried again shortly: %s", st.LockID, backend, obs.Message)
			} else {
				obs.Message = fmt.Sprintf("Cannot take the lock of %s, tried again shortly: %s", backend, obs.Message)
			}
		}
		set(obs)
	case res.taken != nil:
		st.LockID, st.LockInfo, st.Holder = res.taken.id, res.taken.info.DeepCopy(), nil
		st.HeldSince = res.taken.info.Created.DeepCopy()
		set(heldObservation(sl, backend))
	case res.kept:
		st.Holder = nil
		set(heldObservation(sl, backend))
	case res.unknown && st.LockID != "":
		st.Holder = nil
		set(unconfirmedObservation(sl, backend, res.why))
	case res.action == slockRelease && res.withheld != "":
		set(conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.LockNotReleasedReason, Message: fmt.Sprintf(
			"Expired at %s, but lock %s of %s was not released: %s. It stays held on the server: release it with terraform force-unlock %s "+
				"(see the backend's status.server for what force-unlock does there), then delete this StateLock.",
			sl.Spec.Until.UTC().Format(time.RFC3339), st.LockID, backend, res.withheld, st.LockID)})
	case res.action == slockHold && st.LockID != "":
		lost := st.LockID
		st.LockID, st.LockInfo, st.HeldSince, st.Holder = "", nil, nil, res.holder
		st.ReacquireRequest = reacquireRecord(sl.Annotations[backendsv1alpha1.ReacquireAnnotation])
		by := "it was released by someone else (a force unlock)"
		if res.holder != nil {
			by = fmt.Sprintf("%s now holds it (taken after a force unlock)", describeLockHolder(res.holder))
		}
		set(conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.LockLostReason, Message: fmt.Sprintf(
			"Lost lock %s of %s: %s. The StateLock does not take it again until its spec changes or its %s annotation gets a new value.",
			lost, backend, by, backendsv1alpha1.ReacquireAnnotation)})
	case res.action == slockHold:
		st.Holder = res.holder
		set(conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.WaitingForLockReason, Message: fmt.Sprintf(
			"Waiting for the lock of %s: %s. The StateLock takes it as soon as it is free, never by force.",
			backend, describeLockHolder(res.holder))})
	case res.action == slockRelease:
		obs := expiredObservation(sl, st.LockID, backend)
		if !res.released {
			obs = expiredObservation(sl, "", backend)
			obs.Message += fmt.Sprintf(" Lock %s was no longer held by the StateLock: nothing to release.", st.LockID)
		}
		st.LockID, st.LockInfo, st.HeldSince, st.Holder = "", nil, nil, nil
		set(obs)
	}
}

// heldObservation is the Locked condition of a StateLock holding its lock.
func heldObservation(sl *backendsv1alpha1.StateLock, backend string) conditions.Observation {
	since := ""
	if sl.Status.HeldSince != nil {
		since = " since " + sl.Status.HeldSince.UTC().Format(time.RFC3339)
	}
	until := ""
	if sl.Spec.Until != nil {
		until = ", until " + sl.Spec.Until.UTC().Format(time.RFC3339)
	}
	return conditions.Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.LockAcquiredReason, Message: fmt.Sprintf(
		"Holds lock %s of %s%s%s", sl.Status.LockID, backend, since, until)}
}

// learningObservation is the Locked condition of a StateLock that waits
// for its backend to learn its state server before it takes the lock
// (msg says so): WaitingForLock when the backend saw the lock held
// (holder), since that is what the learning waits for; Progressing
// otherwise.
func learningObservation(msg string, holder *backendsv1alpha1.LockInfo, backend string) conditions.Observation {
	if holder == nil {
		return conditions.Observation{Status: metav1.ConditionUnknown, Reason: backendsv1alpha1.ProgressingReason, Message: msg + "."}
	}
	return conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.WaitingForLockReason, Message: fmt.Sprintf(
		"Waiting for the lock of %s, which another holds (%s): it is taken once it is free, never by force. %s.",
		backend, strings.TrimSuffix(describeHolder(holder), "."), msg)}
}

// unconfirmedObservation is the Locked condition of a StateLock holding a
// lock the server cannot confirm is still its own (why): Unknown, never
// lost, with the lock kept as held.
func unconfirmedObservation(sl *backendsv1alpha1.StateLock, backend, why string) conditions.Observation {
	held := heldObservation(sl, backend)
	return conditions.Observation{Status: metav1.ConditionUnknown, Reason: backendsv1alpha1.HolderNotReportedReason, Message: fmt.Sprintf(
		"%s, as far as the server tells: %s. The operator cannot see whether someone else released or took it since; "+
			"it keeps it as held and releases it when the StateLock expires or is deleted.", held.Message, why)}
}

// expiredObservation is the Locked condition of a StateLock whose until
// has passed; released is the lock it released then, "" when it held
// none.
func expiredObservation(sl *backendsv1alpha1.StateLock, released, backend string) conditions.Observation {
	msg := fmt.Sprintf("Expired at %s", sl.Spec.Until.UTC().Format(time.RFC3339))
	if released != "" {
		msg += fmt.Sprintf(": released lock %s of %s", released, backend)
	}
	return conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.ExpiredReason, Message: msg + "."}
}

// describeLockHolder names a holder in a message: its ID, Who and when it
// took the lock, as far as they are known.
func describeLockHolder(h *backendsv1alpha1.LockInfo) string {
	if h == nil {
		return "the lock is held by a holder whose lock information cannot be read"
	}
	msg := "lock " + h.ID
	if h.Who != "" {
		msg += " held by " + h.Who
	}
	if h.Created != nil {
		msg += " since " + h.Created.UTC().Format(time.RFC3339)
	}
	return msg
}

// ownsLock reports whether holder is sl's lock: the one its status
// records, or (when it records none) one it took and could not record
// (the manager stopped, or the status write failed): its ID is sl's (see
// stateLockID), or, for a lock taken before IDs were derived or before a
// spec change, Who names sl and it was taken after sl was created
// (within adoptionClockSkew), so not by an earlier StateLock of the same
// name.
func ownsLock(sl *backendsv1alpha1.StateLock, holder *backendsv1alpha1.LockInfo) bool {
	switch {
	case holder == nil:
		return false
	case sl.Status.LockID != "":
		return holder.ID == sl.Status.LockID
	case holder.ID == stateLockID(sl):
		return true
	}
	return holder.Who == stateLockWho(sl) && holder.Created != nil &&
		!holder.Created.Add(adoptionClockSkew).Before(sl.CreationTimestamp.Time)
}

// adoptionClockSkew is how far the operator's clock (a lock's Created) may
// lag the API server's (the StateLock's creationTimestamp) for a lock the
// StateLock took and did not record to be recognised as its own.
const adoptionClockSkew = time.Minute

// Bounds of the wait between two attempts to take a lock another holds:
// it grows with the time waited so far, so that a short run's lock is
// taken soon after it ends, and a long freeze costs little.
const (
	minLockRetry = 2 * time.Second
	maxLockRetry = 30 * time.Second
)

// lockRetryAfter is the wait before the next attempt of a StateLock that
// has waited for the lock since since: a quarter of the time waited,
// between minLockRetry and maxLockRetry.
func lockRetryAfter(since, now time.Time) time.Duration {
	return min(max(now.Sub(since)/4, minLockRetry), maxLockRetry)
}

// slockInterval is the wait until the next operation of a StateLock doing
// action: while it waits for the lock or could not reach the server,
// lockRetryAfter; while it holds the lock, checkEvery (the backend's
// probe interval); 0 when nothing is due.
func slockInterval(sl *backendsv1alpha1.StateLock, action slockAction, checkEvery time.Duration, now time.Time) time.Duration {
	c := meta.FindStatusCondition(sl.Status.Conditions, backendsv1alpha1.LockedCondition)
	switch {
	case action == slockIdle:
		return 0
	case c != nil && (c.Reason == backendsv1alpha1.WaitingForLockReason || c.Status == metav1.ConditionUnknown):
		return lockRetryAfter(c.LastTransitionTime.Time, now)
	case action == slockHold && sl.Status.LockID != "":
		return checkEvery
	}
	return minLockRetry
}
