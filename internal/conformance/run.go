package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/infrastate/backend-operator/internal/stateclient"
)

// run is one Check in progress.
type run struct {
	c    Client
	opts Options
	// a is the check's lock and aJSON its body; b the second LOCK's;
	// wrongID the ID the wrong UNLOCK names.
	a, b         stateclient.LockInfo
	aJSON, bJSON []byte
	wrongID      string
	// held are the bodies of the locks the check holds, by ID.
	held map[string][]byte
	// unsure is true once an UNLOCK of the check's lock got no answer:
	// the lock may be gone, and another holder's in its place, so the
	// empty body must not be sent until a LOCK of its own succeeds.
	unsure bool
	res    Result
}

func newRun(c Client, opts Options) *run {
	now := opts.Now().UTC()
	// Every field of the two LockInfos differs, so that a conflict answer
	// shows whose value each field carries.
	a := stateclient.LockInfo{ID: opts.NewID(), Operation: "OperationTypeInvalid", Info: opts.Info,
		Who: opts.Who, Version: "0.0.0-conformance.1", Created: now, Path: ""}
	b := stateclient.LockInfo{ID: opts.NewID(), Operation: "OperationTypePlan", Info: opts.Info + " (second lock)",
		Who: opts.Who + " (second lock)", Version: "0.0.0-conformance.2", Created: now.Add(time.Millisecond), Path: "conformance"}
	r := &run{c: c, opts: opts, a: a, b: b, wrongID: opts.NewID(), held: map[string][]byte{}}
	r.aJSON, _ = a.Encode() // cannot fail: strings and a time
	r.bJSON, _ = b.Encode()
	return r
}

// step records one request and its answer.
func (r *run) step(request string, status int, outcome string) {
	r.res.Steps = append(r.res.Steps, Step{Request: request, Status: status, Outcome: outcome})
}

// check runs the steps; releaseAll runs after it, whatever it returns.
func (r *run) check(ctx context.Context) error {
	before, err := r.c.FetchStatus(ctx)
	if err != nil {
		return fmt.Errorf("reading the state: %w", err)
	}
	r.step("GET the state", before, "")
	if err := r.lockFirst(ctx); err != nil {
		return err
	}
	r.learnCreation(ctx, before)
	if done, err := r.secondLock(ctx); done || err != nil {
		return err
	}
	if err := r.lockAgain(ctx); err != nil {
		return err
	}
	if err := r.wrongUnlock(ctx); err != nil {
		return err
	}
	for _, body := range unlockBodies {
		if err := r.tryRelease(ctx, body); err != nil {
			return err
		}
	}
	return nil
}

// lockFirst takes the check's lock A, or stops when someone holds it.
func (r *run) lockFirst(ctx context.Context) error {
	a := classify(r.lock(ctx, r.a, r.aJSON))
	switch {
	case a.err == nil:
		r.step("LOCK under the check's ID", a.status, "locked")
		return nil
	case a.isConflict():
		r.res.Locked = &Conflict{Status: a.status, Holder: a.conflict.Info}
		r.step("LOCK under the check's ID", a.status, "refused: the state is locked by someone else")
		return fmt.Errorf("%w (%w)", ErrStateLocked, a.err)
	}
	r.step("LOCK under the check's ID", a.status, "failed")
	return fmt.Errorf("taking the check's lock: %w", a.err)
}

// lock takes the lock of info and records it as held.
func (r *run) lock(ctx context.Context, info stateclient.LockInfo, body []byte) error {
	_, err := r.c.Lock(ctx, info)
	if err == nil {
		r.held[info.ID] = body
		if info.ID == r.a.ID {
			r.unsure = false
		}
	}
	return err
}

// learnCreation reads the state's status again: a 404 before the LOCK and
// something else after it means the LOCK created the state.
func (r *run) learnCreation(ctx context.Context, before int) {
	after, err := r.c.FetchStatus(ctx)
	if err != nil {
		r.step("GET the state again", 0, "no answer")
		return
	}
	r.step("GET the state again", after, "")
	if before == http.StatusNotFound {
		created := after != http.StatusNotFound
		r.res.Behaviour.LockCreatesState = &created
	}
}

// secondLock sends a LOCK under ID B while the check holds A. done is true
// when the server granted it: it does not lock, and nothing more is to
// learn.
func (r *run) secondLock(ctx context.Context) (done bool, err error) {
	const request = "LOCK under a second ID"
	a := classify(r.lock(ctx, r.b, r.bJSON))
	switch {
	case a.err == nil:
		r.step(request, a.status, "granted: the server does not lock")
		return true, nil
	case !a.isConflict():
		r.step(request, a.status, "refused, but not as a conflict")
		return false, fmt.Errorf("sending a second LOCK: %w", a.err)
	}
	b := &r.res.Behaviour
	b.LocksExclusive, b.ConflictStatus = true, a.status
	info := a.conflict.Info
	if info == nil || info.ID != r.a.ID {
		r.step(request, a.status, "conflict naming no holder")
		return false, nil
	}
	b.HolderInConflicts = true
	b.ConflictFields = fieldSources(*info, r.a, r.b)
	b.HolderVerbatim = bytes.Equal(a.conflict.HolderJSON(), r.aJSON)
	r.step(request, a.status, "conflict naming the holder")
	return false, nil
}

// fieldSources says whose value each field of a conflict's holder
// carries: the holder's (a's), the requester's (b's), or neither.
func fieldSources(got, a, b stateclient.LockInfo) map[string]FieldSource {
	values := func(l stateclient.LockInfo) []string {
		created := ""
		if !l.Created.IsZero() {
			created = l.Created.UTC().Format(time.RFC3339Nano)
		}
		return []string{l.ID, l.Operation, l.Info, l.Who, l.Version, created, l.Path}
	}
	g, av, bv := values(got), values(a), values(b)
	out := map[string]FieldSource{}
	for i, key := range LockInfoKeys {
		switch g[i] {
		case av[i]:
			out[key] = FieldHolder
		case bv[i]:
			out[key] = FieldRequester
		default:
			out[key] = FieldServer
		}
	}
	return out
}

// lockAgain sends a LOCK under A, with A's body, while the check holds A.
func (r *run) lockAgain(ctx context.Context) error {
	const request = "LOCK again under the holder's ID"
	a := classify(r.lock(ctx, r.a, r.aJSON))
	switch {
	case a.err == nil:
		r.res.Behaviour.ReentrantLock = true
		r.step(request, a.status, "granted: re-entrant")
	case a.status != 0:
		r.step(request, a.status, "refused: not re-entrant")
	default:
		return fmt.Errorf("sending a LOCK again: %w", a.err)
	}
	return nil
}

// wrongUnlock sends an UNLOCK naming the wrong ID W while the check holds
// A, the only lock there is: as a LockInfo naming only W, then, when the
// server refuses that form, as A's LockInfo under W.
func (r *run) wrongUnlock(ctx context.Context) error {
	wrongExact := r.a
	wrongExact.ID = r.wrongID
	wrongJSON, _ := wrongExact.Encode()
	forms := []struct {
		request string
		send    func() error
	}{
		{"UNLOCK naming another ID (ID-only body)", func() error { return r.c.ForceUnlock(ctx, r.wrongID) }},
		{"UNLOCK naming another ID (full LockInfo)", func() error { return r.c.UnlockWithBody(ctx, wrongJSON) }},
	}
	b := &r.res.Behaviour
	for _, form := range forms {
		a := classify(form.send())
		switch {
		case a.err == nil:
			b.UnlockIgnoresBody = true
			delete(r.held, r.a.ID)
			r.step(form.request, a.status, "released the check's lock: the server ignores UNLOCK bodies")
			return nil
		case a.isConflict():
			b.UnlockChecksID = true
			r.step(form.request, a.status, "refused")
			return nil
		case a.status == 0:
			r.unsure = true
			return fmt.Errorf("sending an UNLOCK naming another ID: %w", a.err)
		}
		r.step(form.request, a.status, "refused for its form")
	}
	return nil
}

// tryRelease takes the lock A again when the check no longer holds it,
// then sends body to release it.
func (r *run) tryRelease(ctx context.Context, body UnlockBody) error {
	if _, ok := r.held[r.a.ID]; !ok {
		a := classify(r.lock(ctx, r.a, r.aJSON))
		switch {
		case a.isConflict():
			r.step("LOCK under the check's ID", a.status, "refused: someone else took the lock")
			return fmt.Errorf("%w (%w)", ErrInterrupted, a.err)
		case a.err != nil:
			return fmt.Errorf("taking the check's lock again: %w", a.err)
		}
		r.step("LOCK under the check's ID", a.status, "locked")
	}
	request := "UNLOCK with the " + bodyNames[body]
	a := classify(r.release(ctx, body))
	b := &r.res.Behaviour
	if a.status == 0 {
		r.unsure = true
		return fmt.Errorf("sending an UNLOCK with the %s: %w", bodyNames[body], a.err)
	}
	if b.UnlockStatuses == nil {
		b.UnlockStatuses = map[UnlockBody]int{}
	}
	b.UnlockStatuses[body] = a.status
	if a.status != http.StatusOK {
		r.step(request, a.status, "refused")
		return nil
	}
	delete(r.held, r.a.ID)
	b.UnlockBodies = append(b.UnlockBodies, body)
	r.step(request, a.status, "released")
	return nil
}

// bodyNames name the bodies in steps and errors.
var bodyNames = map[UnlockBody]string{
	BodyExact: "exact LockInfo",
	BodyID:    "ID-only body",
	BodyEmpty: "empty body",
}

// release sends the UNLOCK of body for the check's lock A.
func (r *run) release(ctx context.Context, body UnlockBody) error {
	switch body {
	case BodyID:
		return r.c.ForceUnlock(ctx, r.a.ID)
	case BodyEmpty:
		return r.c.ForceUnlockEmptyBody(ctx)
	}
	return r.c.UnlockWithBody(ctx, r.aJSON)
}

// releaseAll releases every lock the check still holds, each with the
// bodies that released the check's lock (all of them when that is not
// known), exact first; the empty body only for A while the check is sure
// A is the lock held. It runs even when ctx is done, each attempt within
// Options.ReleaseTimeout.
func (r *run) releaseAll(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(r.held)) {
		if err := r.releaseHeld(ctx, id); err != nil {
			r.res.LeftLocks = append(r.res.LeftLocks, id)
			errs = append(errs, fmt.Errorf("lock %s: %w", id, err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrLockLeft, errors.Join(errs...))
}

// releaseHeld releases the held lock id; the error is the last answer.
func (r *run) releaseHeld(ctx context.Context, id string) error {
	body := r.held[id]
	bodies := r.res.Behaviour.UnlockBodies
	if len(bodies) == 0 {
		bodies = []UnlockBody{BodyExact, BodyID, BodyEmpty}
	}
	var last error
	for _, form := range []UnlockBody{BodyExact, BodyID, BodyEmpty} {
		if !slices.Contains(bodies, form) || (form == BodyEmpty && (id != r.a.ID || r.unsure)) {
			continue
		}
		attempt, cancel := context.WithTimeout(ctx, r.opts.ReleaseTimeout)
		switch form {
		case BodyExact:
			last = r.c.UnlockWithBody(attempt, body)
		case BodyID:
			last = r.c.ForceUnlock(attempt, id)
		case BodyEmpty:
			last = r.c.ForceUnlockEmptyBody(attempt)
		}
		cancel()
		a := classify(last)
		if a.err == nil {
			delete(r.held, id)
			r.step("UNLOCK with the "+bodyNames[form]+" (clean-up)", a.status, "released")
			return nil
		}
		if a.status == 0 {
			r.unsure = r.unsure || id == r.a.ID
		}
	}
	if last == nil {
		last = errors.New("no UNLOCK body is known to release it")
	}
	return last
}

// sortBodies puts UnlockBodies in the order exact, id, empty.
func (b *Behaviour) sortBodies() {
	order := map[UnlockBody]int{BodyExact: 0, BodyID: 1, BodyEmpty: 2}
	slices.SortFunc(b.UnlockBodies, func(x, y UnlockBody) int { return order[x] - order[y] })
}
