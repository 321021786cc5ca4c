package stateserver

import "net/http"

// The REST state servers people run answer the lock protocol in different
// ways. The options of this file make the server behave like each of them,
// so that a client's handling of every behaviour can be tested over real
// TCP. They combine freely, and with [WithUnlockBodies]:
//
//   - [WithConflictAnswer] shapes every lock conflict answer: a refused
//     LOCK, a refused UNLOCK, and an update or delete refused under a lock.
//   - [WithUnlockCheck] decides which UNLOCK releases the lock. With
//     [UnlockChecksID] (the default) and [UnlockIgnoresBody], the
//     [UnlockBodies] setting first refuses the body forms it does not accept
//     (the empty body with 500, a body other than the stored LockInfo with
//     400); what it lets through is then checked against the holder's ID, or
//     not at all. With [UnlockExactBody] the UnlockBodies setting has no
//     effect: only a byte-identical copy of the stored LockInfo releases.
//   - [WithReentrantLock] makes a LOCK under the holder's own ID succeed.
//
// [WithGitLab] replaces all of them: it serves GitLab's routes and answers
// as GitLab does (see gitlab.go).

// ConflictAnswer is how a [Server] answers a request refused because of a
// lock. Every value keeps the status of an UNLOCK refusal at 409; the
// status of a refused LOCK, update or delete is the one the value names.
type ConflictAnswer int

const (
	// ConflictHolder423 answers 423 Locked with the holder's LockInfo
	// JSON, as Terraform's own test server does. The default.
	ConflictHolder423 ConflictAnswer = iota
	// ConflictHolder409 answers 409 Conflict with the holder's LockInfo
	// JSON.
	ConflictHolder409
	// ConflictText409 answers 409 Conflict with the plain text
	// "Conflict": nothing about the holder.
	ConflictText409
	// ConflictText423 answers 423 Locked with the plain text "Locked":
	// nothing about the holder.
	ConflictText423
)

// WithConflictAnswer makes the server answer lock conflicts as a says (see
// [ConflictAnswer]).
func WithConflictAnswer(a ConflictAnswer) Option {
	return func(s *Server) {
		s.conflict = a
	}
}

// UnlockCheck is which UNLOCK requests release the lock of a [Server].
type UnlockCheck int

const (
	// UnlockChecksID releases the lock for an UNLOCK naming the holder's
	// ID, or with an empty body (a force unlock); another ID gets 409 with
	// the conflict answer of [WithConflictAnswer]. The default.
	UnlockChecksID UnlockCheck = iota
	// UnlockIgnoresBody releases the current lock on any UNLOCK, whatever
	// ID its body names: an UNLOCK meant for one lock releases another
	// holder's.
	UnlockIgnoresBody
	// UnlockExactBody releases the lock only for a byte-identical copy of
	// the LockInfo that took it. Anything else, the empty body included,
	// gets 409 echoing the request's body (not the holder).
	UnlockExactBody
)

// WithUnlockCheck makes the server release locks as c says (see
// [UnlockCheck]).
func WithUnlockCheck(c UnlockCheck) Option {
	return func(s *Server) {
		s.unlockCheck = c
	}
}

// WithReentrantLock makes a LOCK under the ID that holds the lock succeed
// (200) and keep the stored LockInfo, as some servers do; without it such a
// LOCK is a conflict like any other.
func WithReentrantLock() Option {
	return func(s *Server) {
		s.reentrant = true
	}
}

// lockStatus is the status of a refused LOCK, update or delete.
func (s *Server) lockStatus() int {
	if s.conflict == ConflictHolder409 || s.conflict == ConflictText409 {
		return http.StatusConflict
	}
	return http.StatusLocked
}

// conflict is the answer to a request refused with status because of the
// lock whose stored LockInfo is holder: the holder, or plain text, as
// [WithConflictAnswer] says.
func (s *Server) conflictAnswer(status int, holder []byte) *conflictError {
	if s.conflict == ConflictText409 || s.conflict == ConflictText423 {
		return &conflictError{status: status, text: http.StatusText(status)}
	}
	return &conflictError{status: status, holder: holder}
}
