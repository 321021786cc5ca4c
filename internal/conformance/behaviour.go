package conformance

import "slices"

// UnlockBody names a form of UNLOCK body.
type UnlockBody string

const (
	// BodyExact is the LockInfo JSON that took the lock, byte for byte:
	// what Terraform's client sends to release its own lock. For a lock
	// the operator did not take, it is the holder's LockInfo exactly as a
	// conflict answer carried it (stateclient.LockError.HolderJSON), sent
	// with stateclient.Client.UnlockWithBody.
	BodyExact UnlockBody = "exact"
	// BodyID is a LockInfo naming only the ID, the other fields zero: what
	// OpenTofu 1.10+ force-unlock sends (stateclient.Client.ForceUnlock).
	BodyID UnlockBody = "id"
	// BodyEmpty is no body: what `terraform force-unlock` sends
	// (stateclient.Client.ForceUnlockEmptyBody). It names no lock, so a
	// server releases whatever lock is held.
	BodyEmpty UnlockBody = "empty"
)

// unlockBodies are the bodies in the order Check tries them on the lock
// it holds, which leaves the exact body, the one most servers accept, for
// last.
var unlockBodies = []UnlockBody{BodyID, BodyEmpty, BodyExact}

// FieldSource says whose value a field of a conflict answer carried.
type FieldSource string

const (
	// FieldHolder is the holder's own value, as it sent it with its LOCK.
	FieldHolder FieldSource = "holder"
	// FieldRequester is the value the refused LOCK sent, echoed back: it
	// says nothing about the holder, and must not be shown as the
	// holder's.
	FieldRequester FieldSource = "requester"
	// FieldServer is a value of the server's own, or none: GitLab writes
	// the holder's GitLab user as Who and its own lock time as Created.
	FieldServer FieldSource = "server"
)

// LockInfoKeys are the keys of a LockInfo, in Terraform's order.
var LockInfoKeys = []string{"ID", "Operation", "Info", "Who", "Version", "Created", "Path"}

// Behaviour is what a state server was seen to do with the lock protocol,
// learned by Check with the check's own locks only. Decide tells from it
// what each of the operator's lock features may do there. Its zero value
// has seen nothing, and Decide refuses every feature on it.
type Behaviour struct {
	// LocksExclusive is true when the server refused a LOCK under a second
	// ID while the check held the lock. A server that grants both does not
	// lock at all.
	LocksExclusive bool `json:"locksExclusive"`
	// ConflictStatus is the status of that refusal (409 or 423); 0 when
	// none was seen.
	ConflictStatus int `json:"conflictStatus,omitempty"`
	// HolderInConflicts is true when that refusal named the holder: a
	// LockInfo whose ID is the check's lock.
	HolderInConflicts bool `json:"holderInConflicts"`
	// ConflictFields says, for each LockInfo key of that refusal, whose
	// value it carried; set only when HolderInConflicts.
	ConflictFields map[string]FieldSource `json:"conflictFields,omitempty"`
	// HolderVerbatim is true when that refusal's body was, byte for byte,
	// the LockInfo the check locked with: a force unlock can send it back
	// to a server that releases only on the exact body.
	HolderVerbatim bool `json:"holderVerbatim"`
	// ReentrantLock is true when a LOCK again under the holder's own ID
	// answered 200.
	ReentrantLock bool `json:"reentrantLock"`
	// UnlockChecksID is true when an UNLOCK naming another ID than the
	// holder's was refused with 409 or 423.
	UnlockChecksID bool `json:"unlockChecksID"`
	// UnlockIgnoresBody is true when an UNLOCK naming another ID than the
	// holder's released the lock: any UNLOCK releases any lock there. When
	// neither this nor UnlockChecksID is true, the server refused that
	// UNLOCK for its form, and whether it checks IDs is not known.
	UnlockIgnoresBody bool `json:"unlockIgnoresBody"`
	// UnlockBodies are the bodies that released the check's lock, in the
	// order exact, id, empty.
	UnlockBodies []UnlockBody `json:"unlockBodies,omitempty"`
	// UnlockStatuses is the status each body was answered with while the
	// check held the lock: 200 for those of UnlockBodies.
	UnlockStatuses map[UnlockBody]int `json:"unlockStatuses,omitempty"`
	// LockCreatesState is true when the state did not exist before the
	// check's LOCK (GET 404) and did after it (as GitLab's 204); false
	// when it still did not; nil when the state existed already, which
	// tells nothing.
	LockCreatesState *bool `json:"lockCreatesState,omitempty"`
}

// Releases reports whether body released the check's lock.
func (b Behaviour) Releases(body UnlockBody) bool {
	return slices.Contains(b.UnlockBodies, body)
}

// HolderField reports whether a conflict's key carries a value the server
// vouches for as the holder's: the holder's own, or the server's (such as
// GitLab's user as Who), but never the requester's echo.
func (b Behaviour) HolderField(key string) bool {
	src, ok := b.ConflictFields[key]
	return ok && src != FieldRequester
}
