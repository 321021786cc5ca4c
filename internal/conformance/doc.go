// Package conformance learns how a REST state server answers the lock
// protocol, and decides from that what the operator's lock features may
// do there.
//
// The servers people run differ where the protocol leaves room (see
// PROTOCOL.md, "How real servers differ"): some name the holder in a
// conflict and some answer plain text; some check the ID an UNLOCK names,
// some release any lock on any UNLOCK, some only on the exact LockInfo
// that locked; some grant a LOCK again under the holder's own ID; GitLab
// echoes the requester's fields in a conflict and creates a state on
// LOCK. A client that assumes one of these breaks silently on the others.
//
// [Check] learns a server's [Behaviour] with locks of its own only, on a
// state that is not locked, and always releases what it took:
//
//	sc, err := stateclient.New(cfg)
//	...
//	res, err := conformance.Check(ctx, sc, conformance.Options{Who: "backend-operator/ns/name"})
//	switch {
//	case errors.Is(err, conformance.ErrStateLocked):
//		// someone holds the lock: try again later; nothing was touched
//	case errors.Is(err, conformance.ErrLockLeft):
//		// res.LeftLocks names the check's lock it could not release: say so
//	case err != nil:
//		// the server could not be asked (credentials, network): try again
//	}
//	features := conformance.Decide(res.Behaviour) // only when res.Complete
//
// [Decide] is a pure function from a Behaviour to [Features]: for each
// lock feature (the lock check, a StateLock's ownership check and release,
// forceUnlock, lockPolicy.releaseWhenHolderGone) whether it may run, with
// which UNLOCK body, under which guard, or why it is refused and what
// `terraform force-unlock` would do instead. A controller records the
// Behaviour (it has JSON tags for a status field), calls Decide where a
// feature acts, and runs Check again when the address or the credentials
// change.
//
// The stateserver command's `conformance` subcommand runs the same check
// against a server on a scratch state and prints both as a table.
package conformance
