package conformance

import (
	"fmt"
	"net/http"
	"strings"
)

// Features is what each of the operator's lock features may do on a
// server, as Decide tells from the server's Behaviour.
type Features struct {
	// LockCheck is probe.lockCheck.
	LockCheck LockCheckPlan `json:"lockCheck"`
	// Ownership is how a StateLock checks that it still holds its lock.
	Ownership OwnershipPlan `json:"ownership"`
	// Release is how a StateLock (and the lock check) releases a lock it
	// took.
	Release ReleasePlan `json:"release"`
	// ForceUnlock is spec.forceUnlock: releasing the lock a named ID holds.
	ForceUnlock NamedUnlockPlan `json:"forceUnlock"`
	// ReleaseWhenHolderGone is spec.lockPolicy.releaseWhenHolderGone:
	// releasing the lock of a runner Pod that is gone.
	ReleaseWhenHolderGone NamedUnlockPlan `json:"releaseWhenHolderGone"`
}

// LockCheckPlan is what probe.lockCheck may do: take the lock to learn
// whether it is held, and by whom, and release it at once when it got it.
type LockCheckPlan struct {
	// Allowed is false when the check must not run: it could not release
	// the lock it takes, or the server does not lock.
	Allowed bool `json:"allowed"`
	// Body is the body the check releases its own lock with, right after
	// its LOCK succeeded (so that even a body naming no lock can release
	// only its own).
	Body UnlockBody `json:"body,omitempty"`
	// HolderKnown is true when a conflict names the holder; false when
	// the check can tell a held lock from a free one, and nothing more.
	HolderKnown bool `json:"holderKnown"`
	// HolderFields are the LockInfo keys of a conflict that status may
	// show as the holder's: those the server vouches for, never the
	// requester's values echoed back (see Behaviour.HolderField).
	HolderFields []string `json:"holderFields,omitempty"`
	// DropEchoes is true when which fields a conflict only echoes is not
	// known (the server was not checked): the caller drops those equal to
	// what its own LOCK sent.
	DropEchoes bool `json:"dropEchoes"`
	// SkipWhenStateAbsent is true when a LOCK may create a missing state
	// (Behaviour.LockCreatesState true, or not known): the check must not
	// run while a read finds no state.
	SkipWhenStateAbsent bool `json:"skipWhenStateAbsent"`
	// Reason says, in a sentence for a condition message, why the check
	// is not allowed or cannot name the holder; empty otherwise.
	Reason string `json:"reason,omitempty"`
}

// Ownership is how a StateLock checks that it still holds its lock.
type Ownership string

const (
	// OwnershipByHolder checks with a LOCK under a check ID of its own,
	// whose conflict names the holder, compared with the StateLock's ID.
	OwnershipByHolder Ownership = "holder"
	// OwnershipByReentrantLock checks with a LOCK again under the
	// StateLock's own ID and body: 200 means the lock is still its own (or
	// was free, and is its own again); a conflict means another holder has
	// it.
	OwnershipByReentrantLock Ownership = "reentrant-lock"
	// OwnershipUnknown is when nothing tells: the StateLock reports
	// Locked as Unknown (reason HolderNotReported), never as lost.
	OwnershipUnknown Ownership = "none"
)

// OwnershipPlan is how a StateLock checks its lock.
type OwnershipPlan struct {
	// By is the check to run.
	By Ownership `json:"by"`
	// Reason says why nothing tells, when By is OwnershipUnknown.
	Reason string `json:"reason,omitempty"`
}

// ReleaseGuard is what must hold right before a lock the operator took is
// released with a body that could release another holder's lock.
type ReleaseGuard string

const (
	// GuardNone is for a body that names the lock on a server that checks
	// it: send it at once.
	GuardNone ReleaseGuard = "none"
	// GuardHolderRead sends it only right after a conflict named the lock
	// to release as the holder.
	GuardHolderRead ReleaseGuard = "holder-read"
	// GuardReentrantLock sends it only right after a LOCK again under the
	// lock's own ID succeeded.
	GuardReentrantLock ReleaseGuard = "reentrant-lock"
	// GuardNoLossSeen is when nothing can confirm the holder: send it only
	// while nothing has shown the lock was lost.
	GuardNoLossSeen ReleaseGuard = "no-loss-seen"
)

// ReleasePlan is how a lock the operator took is released.
type ReleasePlan struct {
	// Allowed is false when no body released the check's lock: a lock
	// the operator took could not be released.
	Allowed bool `json:"allowed"`
	// Body is the body to send: the exact LockInfo the lock was taken
	// with whenever the server accepts it.
	Body UnlockBody `json:"body,omitempty"`
	// Guard is what must hold before Body is sent.
	Guard ReleaseGuard `json:"guard,omitempty"`
	// RefusalMeansNotHeld is true when a refusal of Body tells that the
	// lock held is not the one the body names: the server checks the ID
	// an UNLOCK names, and releases on the ID alone, so it refuses no
	// other part of the body.
	RefusalMeansNotHeld bool `json:"refusalMeansNotHeld"`
	// Reason says why, when not Allowed.
	Reason string `json:"reason,omitempty"`
}

// NamedUnlockPlan is how a lock the operator did not take, named by its
// ID, is released (forceUnlock, lockPolicy.releaseWhenHolderGone).
type NamedUnlockPlan struct {
	// Allowed is false when the operator cannot release only the named
	// lock on this server.
	Allowed bool `json:"allowed"`
	// Body is the body to send. BodyExact is the holder's LockInfo as the
	// conflict carried it (stateclient.LockError.HolderJSON).
	Body UnlockBody `json:"body,omitempty"`
	// NeedsHolderRead is true when Body may release whatever lock is
	// held: send it only right after a conflict named the lock as the
	// holder.
	NeedsHolderRead bool `json:"needsHolderRead"`
	// Reason says why the feature is refused, or under which condition
	// it works, in a sentence for a condition message.
	Reason string `json:"reason"`
	// Terraform says what `terraform force-unlock ID` (an empty body)
	// does on this server, the alternative a refusal points to.
	Terraform string `json:"terraform"`
	// OpenTofu says what `tofu force-unlock ID` (OpenTofu 1.10+: the
	// ID-only body) does on this server.
	OpenTofu string `json:"openTofu"`
}

// reasonNotLocking is the reason of every refusal on a server that
// granted a second lock.
const reasonNotLocking = "the server granted a LOCK under a second ID while the first was held: it does not lock"

// Decide tells what each lock feature of the operator may do on a server
// that behaves as b. It is a pure function: the same Behaviour always
// gives the same Features.
func Decide(b Behaviour) Features {
	f := Features{
		Release:   decideRelease(b),
		Ownership: decideOwnership(b),
	}
	f.LockCheck = decideLockCheck(b, f.Release)
	f.ForceUnlock = decideForceUnlock(b)
	f.ReleaseWhenHolderGone = decideHolderGone(b, f.ForceUnlock)
	return f
}

func decideRelease(b Behaviour) ReleasePlan {
	if !b.LocksExclusive {
		return ReleasePlan{Reason: reasonNotLocking}
	}
	body, ok := firstReleasing(b, BodyExact, BodyID, BodyEmpty)
	if !ok {
		return ReleasePlan{Reason: "the server released the check's lock with none of the exact LockInfo, the ID-only body and the empty body: a lock the operator takes could not be released"}
	}
	plan := ReleasePlan{Allowed: true, Body: body, Guard: GuardNone, RefusalMeansNotHeld: b.UnlockChecksID && b.Releases(BodyID) && body != BodyEmpty}
	if !b.UnlockChecksID || body == BodyEmpty {
		switch {
		case b.HolderInConflicts:
			plan.Guard = GuardHolderRead
		case b.ReentrantLock:
			plan.Guard = GuardReentrantLock
		default:
			plan.Guard = GuardNoLossSeen
		}
	}
	return plan
}

func decideOwnership(b Behaviour) OwnershipPlan {
	switch {
	case !b.LocksExclusive:
		return OwnershipPlan{By: OwnershipUnknown, Reason: reasonNotLocking}
	case b.HolderInConflicts:
		return OwnershipPlan{By: OwnershipByHolder}
	case b.ReentrantLock:
		return OwnershipPlan{By: OwnershipByReentrantLock}
	}
	return OwnershipPlan{By: OwnershipUnknown, Reason: "the server's conflicts name no holder and a LOCK again under the holder's ID is refused: nothing tells whether the lock is still the StateLock's"}
}

func decideLockCheck(b Behaviour, release ReleasePlan) LockCheckPlan {
	if !release.Allowed {
		return LockCheckPlan{Reason: release.Reason}
	}
	plan := LockCheckPlan{
		Allowed:             true,
		Body:                release.Body,
		HolderKnown:         b.HolderInConflicts,
		SkipWhenStateAbsent: b.LockCreatesState == nil || *b.LockCreatesState,
	}
	for _, key := range LockInfoKeys {
		if b.HolderInConflicts && b.HolderField(key) {
			plan.HolderFields = append(plan.HolderFields, key)
		}
	}
	if !b.HolderInConflicts {
		plan.Reason = "the server's conflicts name no holder: the lock check tells a held lock from a free one, not who holds it"
	}
	return plan
}

func decideForceUnlock(b Behaviour) NamedUnlockPlan {
	plan := NamedUnlockPlan{Terraform: terraformForceUnlock(b), OpenTofu: tofuForceUnlock(b)}
	if !b.LocksExclusive {
		plan.Reason = reasonNotLocking
		return plan
	}
	exact := b.HolderInConflicts && b.HolderVerbatim && b.Releases(BodyExact)
	switch {
	case b.UnlockChecksID && b.Releases(BodyID):
		plan.Allowed, plan.Body = true, BodyID
		plan.Reason = "the server checks the ID an UNLOCK names: the ID-only body releases the named lock and no other"
	case exact:
		plan.Allowed, plan.Body, plan.NeedsHolderRead = true, BodyExact, true
		plan.Reason = "the server releases a lock on its exact LockInfo, which its conflicts carry byte for byte: it is sent back right after a conflict named the lock"
	case b.HolderInConflicts:
		body, ok := firstReleasing(b, BodyID, BodyEmpty)
		if !ok {
			plan.Reason = "the server released the check's lock only with its exact LockInfo, which its conflicts do not carry byte for byte: the operator cannot build another holder's"
			return plan
		}
		plan.Allowed, plan.Body, plan.NeedsHolderRead = true, body, true
		plan.Reason = "the UNLOCK may release whatever lock is held (" + mayReleaseAny(b, body) + "): it is sent only right after a conflict named the lock"
	case b.UnlockIgnoresBody:
		plan.Reason = "the server releases any lock on any UNLOCK and its conflicts name no holder: the operator cannot tell that the lock held is the named one"
	case !b.UnlockChecksID:
		plan.Reason = "the server's conflicts name no holder, and it refused an UNLOCK naming another ID for its form, so whether it checks IDs is not known"
	default:
		plan.Reason = "the server's conflicts name no holder, and it releases a lock only with " + bodyList(b) + ", which the operator cannot send for a lock it did not take"
	}
	return plan
}

func decideHolderGone(b Behaviour, force NamedUnlockPlan) NamedUnlockPlan {
	plan := NamedUnlockPlan{Terraform: force.Terraform, OpenTofu: force.OpenTofu}
	switch {
	case !b.LocksExclusive:
		plan.Reason = reasonNotLocking
	case !b.HolderInConflicts:
		plan.Reason = "the server's conflicts name no holder: the operator cannot tell whose Pod holds the lock"
	case b.ConflictFields["Who"] != FieldHolder:
		plan.Reason = "the server's conflicts carry a Who of its own (such as GitLab's user name), not the holder's: no Pod can be named"
	case !force.Allowed:
		plan.Reason = force.Reason
	default:
		plan.Allowed, plan.Body, plan.NeedsHolderRead = true, force.Body, true
		plan.Reason = "the holder's Pod is read from the conflict's Who, and the lock released right after a conflict named it"
	}
	return plan
}

// firstReleasing is the first of bodies that released the check's lock.
func firstReleasing(b Behaviour, bodies ...UnlockBody) (UnlockBody, bool) {
	for _, body := range bodies {
		if b.Releases(body) {
			return body, true
		}
	}
	return "", false
}

// mayReleaseAny says why body may release another holder's lock.
func mayReleaseAny(b Behaviour, body UnlockBody) string {
	switch {
	case b.UnlockIgnoresBody:
		return "the server ignores UNLOCK bodies"
	case body == BodyEmpty:
		return "the empty body names no lock"
	}
	return "whether the server checks the ID is not known"
}

// bodyList names the bodies that released the check's lock.
func bodyList(b Behaviour) string {
	var names []string
	for _, body := range b.UnlockBodies {
		names = append(names, bodyNames[body])
	}
	if len(names) == 0 {
		return "no body"
	}
	return "the " + strings.Join(names, " or the ")
}

func terraformForceUnlock(b Behaviour) string {
	return forceUnlockText("terraform force-unlock sends an empty body", b, BodyEmpty,
		"which releases whatever lock is held, without checking the ID")
}

func tofuForceUnlock(b Behaviour) string {
	accepted := "which releases the named lock only"
	if !b.UnlockChecksID {
		accepted = "which releases whatever lock is held"
	}
	return forceUnlockText("tofu force-unlock (OpenTofu 1.10+) sends the ID-only body", b, BodyID, accepted)
}

// forceUnlockText says what a command sending body does on b's server.
func forceUnlockText(sends string, b Behaviour, body UnlockBody, accepted string) string {
	status, tried := b.UnlockStatuses[body]
	switch {
	case b.Releases(body):
		return sends + ", " + accepted
	case tried:
		return fmt.Sprintf("%s, which the server refuses (HTTP %d %s)", sends, status, http.StatusText(status))
	}
	return sends + ", which the check did not try"
}

// Unchecked are the lock features on a server whose check could not run
// because another held the state's lock each time: what the operator
// does before it knows the server, on the one thing every server does
// alike (it releases a lock on the exact LockInfo that took it).
//
//   - The lock check runs, and releases its own lock with its exact
//     LockInfo. A conflict's LockInfo is shown as the holder's, less the
//     fields that only echo the check's own LOCK (the caller compares
//     them with what it sent).
//   - A named lock (forceUnlock, releaseWhenHolderGone) is released with
//     the holder's LockInfo as the conflict carried it, right after the
//     conflict named it: a server that checks IDs, ignores the body or
//     wants the exact body each releases that lock and no other. A
//     conflict that names no holder releases nothing.
//   - A StateLock releases its lock with its exact LockInfo while nothing
//     showed its lock lost, and cannot tell whose the lock is.
func Unchecked() Features {
	const notChecked = "the server's conflicts name no holder, and what its UNLOCK releases is not known yet: " +
		"the operator checks it with a lock of its own once the state is free"
	named := NamedUnlockPlan{Allowed: true, Body: BodyExact, NeedsHolderRead: true, Reason: notChecked,
		Terraform: "terraform force-unlock sends an empty body, which many servers take as a release of whatever lock is held",
		OpenTofu:  "tofu force-unlock (OpenTofu 1.10+) sends a body naming the ID, which most servers check"}
	return Features{
		LockCheck: LockCheckPlan{Allowed: true, Body: BodyExact, HolderKnown: true, DropEchoes: true,
			HolderFields: []string{"ID", "Operation", "Info", "Who", "Version", "Created", "Path"}},
		Ownership: OwnershipPlan{By: OwnershipUnknown,
			Reason: "what the state server does with locks is not known yet, and the operator cannot check it while the lock is held"},
		Release:               ReleasePlan{Allowed: true, Body: BodyExact, Guard: GuardNoLossSeen},
		ForceUnlock:           named,
		ReleaseWhenHolderGone: named,
	}
}
