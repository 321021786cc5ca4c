package conformance

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/infrastate/backend-operator/internal/stateclient"
)

// Client is what Check needs of a state client, for one state address:
// *stateclient.Client satisfies it.
type Client interface {
	// LocksConfigured reports whether both a lock and an unlock address
	// are set; Check takes no lock otherwise.
	LocksConfigured() bool
	// FetchStatus answers the status of a GET of the state.
	FetchStatus(ctx context.Context) (int, error)
	// Lock takes the lock with info as the body.
	Lock(ctx context.Context, info stateclient.LockInfo) (string, error)
	// ForceUnlock sends an UNLOCK whose body names only id.
	ForceUnlock(ctx context.Context, id string) error
	// ForceUnlockEmptyBody sends an UNLOCK with an empty body.
	ForceUnlockEmptyBody(ctx context.Context) error
	// UnlockWithBody sends an UNLOCK with exactly body.
	UnlockWithBody(ctx context.Context, body []byte) error
}

var _ Client = (*stateclient.Client)(nil)

// Errors Check returns, matched with errors.Is.
var (
	// ErrStateLocked: the state was locked by someone else when the
	// check began, so it changed nothing and learned nothing
	// (Result.Locked says by whom, when the server said).
	ErrStateLocked = errors.New("the state is locked by someone else: the check needs it free and did not touch it")
	// ErrInterrupted: someone else took the lock between two of the
	// check's steps, so it stopped; Result.Behaviour holds what the steps
	// before learned.
	ErrInterrupted = errors.New("someone else took the lock during the check, which stopped")
	// ErrLockLeft: the check could not release a lock it took;
	// Result.LeftLocks names it. It blocks every run until released.
	ErrLockLeft = errors.New("the check could not release its own lock")
	// ErrLockingDisabled: the client has no lock or no unlock address.
	ErrLockingDisabled = errors.New("the check needs both a lock and an unlock address")
)

// Options are the settings of Check. The zero value works.
type Options struct {
	// Who is the Who of the check's locks, as Terraform users see it in
	// a conflict while the check runs; empty: "backend-operator".
	Who string
	// Info is the Info of the check's locks: a sentence saying what they
	// are; empty: one saying a conformance check holds them.
	Info string
	// NewID returns the ID of each lock the check takes or names (three:
	// its lock, a second one, a wrong one); nil: random UUIDs.
	NewID func() string
	// Now is the clock of the LockInfo's Created; nil: time.Now.
	Now func() time.Time
	// ReleaseTimeout bounds each attempt to release the check's lock at
	// the end, which runs even when ctx is done; 0: 10s.
	ReleaseTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Who == "" {
		o.Who = "backend-operator"
	}
	if o.Info == "" {
		o.Info = "Taken by a conformance check to learn how the server answers the lock protocol; released within seconds"
	}
	if o.NewID == nil {
		o.NewID = uuid.NewString
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ReleaseTimeout <= 0 {
		o.ReleaseTimeout = 10 * time.Second
	}
	return o
}

// Result is what Check learned and did.
type Result struct {
	// Behaviour is what the server was seen to do. Decide from it only
	// when Complete: a partial Behaviour reads as a server that does less
	// than it may.
	Behaviour Behaviour `json:"behaviour"`
	// Complete is true when every step ran.
	Complete bool `json:"complete"`
	// Locked is the answer to the check's first LOCK when the state was
	// locked by someone else (ErrStateLocked): nothing else was sent.
	Locked *Conflict `json:"locked,omitempty"`
	// Steps are the requests the check sent, in order, with their answers.
	Steps []Step `json:"steps"`
	// LeftLocks are the IDs of the check's locks it could not release
	// (ErrLockLeft); empty when it released every lock it took.
	LeftLocks []string `json:"leftLocks,omitempty"`
}

// Conflict is a refused LOCK: its status, and the holder when the answer
// named one (secrets redacted by the client).
type Conflict struct {
	Status int                   `json:"status"`
	Holder *stateclient.LockInfo `json:"holder,omitempty"`
}

// Step is one request of the check and its answer.
type Step struct {
	// Request says what was sent, such as "LOCK under a second ID".
	Request string `json:"request"`
	// Status is the answer's status; 0 when none came (see Outcome).
	Status int `json:"status"`
	// Outcome is what the answer showed, in a few words.
	Outcome string `json:"outcome"`
}

// Check learns how the server behind c answers the lock protocol, using
// only locks of its own, on a state that must not be locked. It never
// touches a lock it did not take: when the state is locked by someone
// else it stops at once with ErrStateLocked. Otherwise it sends, in
// order:
//
//  1. GET the state (its status), LOCK under its own ID A, GET again: a
//     404 that became another answer tells the LOCK created the state.
//  2. LOCK under a second ID B: is it refused, with which status, does the
//     answer name A, and whose value each LockInfo field carries?
//  3. LOCK again under A with the same body: re-entrant (200) or not.
//  4. UNLOCK naming a third ID W (a LockInfo naming only W, then, if the
//     server refuses that form, A's LockInfo under W): refused means the
//     server checks IDs; 200 means it ignores UNLOCK bodies, and released
//     the check's own lock A, the only lock there was.
//  5. Each release body on the lock A it holds (LOCK A again first when
//     it no longer holds it): the ID-only body, the empty body (sent only
//     right after a LOCK of its own succeeded, so that it can release
//     nothing else), then the exact body.
//
// At the end, whatever happened, even when ctx is done, it releases every
// lock it still holds, with the bodies that worked (the empty body only
// while it is sure the lock is its own); a lock it cannot release is in
// Result.LeftLocks and the error matches ErrLockLeft.
//
// On a server that creates a state on LOCK (Behaviour.LockCreatesState),
// a check on a state that does not exist creates it: run it on a state
// that exists, or on a scratch state to delete afterwards. The error is
// nil when every step ran (Complete); else it matches ErrStateLocked,
// ErrInterrupted, ErrLockingDisabled or ErrLockLeft, or wraps the failed
// request's error (refused credentials, an unreachable server).
func Check(ctx context.Context, c Client, opts Options) (Result, error) {
	if !c.LocksConfigured() {
		return Result{}, ErrLockingDisabled
	}
	r := newRun(c, opts.withDefaults())
	err := r.check(ctx)
	if released := r.releaseAll(ctx); released != nil {
		err = errors.Join(err, released)
	}
	r.res.Complete = err == nil
	r.res.Behaviour.sortBodies()
	return r.res, err
}

// answer is what the check reads of an error from the client: the status
// of the answer (0 without one), and the conflict when it was one.
type answer struct {
	status   int
	conflict *stateclient.LockError
	err      error
}

// classify reads err, the result of one request.
func classify(err error) answer {
	if err == nil {
		return answer{status: http.StatusOK}
	}
	a := answer{err: err}
	var lockErr *stateclient.LockError
	var statusErr *stateclient.StatusError
	switch {
	case errors.As(err, &lockErr):
		a.status, a.conflict = lockErr.StatusCode, lockErr
	case errors.As(err, &statusErr):
		a.status = statusErr.StatusCode
	}
	return a
}

// isConflict is true for a 409 or 423 answer.
func (a answer) isConflict() bool {
	return a.status == http.StatusConflict || a.status == http.StatusLocked
}
