package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// scriptedLocker is a stateLocker whose answers the test scripts; it
// records every call.
type scriptedLocker struct {
	// acquire's answer.
	taken      *heldLock
	takeHolder *backendsv1alpha1.LockInfo
	takeErr    error
	// holder's answer.
	holderInfo *backendsv1alpha1.LockInfo
	holderErr  error
	// check's answer.
	checked  lockCheck
	checkErr error
	// release's answer.
	releaseResult lockRelease
	releaseErr    error

	// calls are the calls made, in order.
	calls []string
	// took is the LockInfo acquire was given, released the lock release
	// was given, with noLossSeen.
	took       *stateclient.LockInfo
	released   *heldLock
	noLossSeen bool
	// noDeadline is set when a call came without a deadline.
	noDeadline bool
}

func (l *scriptedLocker) deadline(ctx context.Context) {
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > probeTimeout {
		l.noDeadline = true
	}
}

func (l *scriptedLocker) acquire(ctx context.Context, info stateclient.LockInfo) (*heldLock, *backendsv1alpha1.LockInfo, error) {
	l.deadline(ctx)
	l.calls = append(l.calls, "acquire")
	l.took = &info
	return l.taken, l.takeHolder, l.takeErr
}

func (l *scriptedLocker) holder(ctx context.Context) (*backendsv1alpha1.LockInfo, error) {
	l.deadline(ctx)
	l.calls = append(l.calls, "holder")
	return l.holderInfo, l.holderErr
}

func (l *scriptedLocker) check(ctx context.Context, held heldLock) (lockCheck, error) {
	l.deadline(ctx)
	l.calls = append(l.calls, "check "+held.id)
	return l.checked, l.checkErr
}

func (l *scriptedLocker) release(ctx context.Context, held heldLock, noLossSeen bool) (lockRelease, error) {
	l.deadline(ctx)
	l.calls = append(l.calls, "release "+held.id)
	l.released, l.noLossSeen = &held, noLossSeen
	return l.releaseResult, l.releaseErr
}

func (l *scriptedLocker) close() { l.calls = append(l.calls, "close") }

// slockOp is the operation action of sl as the reconcile builds it at
// slockNow.
func slockOp(sl *backendsv1alpha1.StateLock, action slockAction) slockOperation {
	return slockOperation{action: action, held: heldFromStatus(sl), take: newStateLockInfo(sl, slockNow), owns: lockOwnedBy(sl),
		noLossSeen: sl.Status.LockID != ""}
}

// runSlockOp runs the operation action of sl with l, and fails the test
// when it fails.
func runSlockOp(ctx context.Context, t *testing.T, l stateLocker, sl *backendsv1alpha1.StateLock, action slockAction) slockResult {
	t.Helper()
	res := slockOp(sl, action).run(ctx, l)
	if res.err != nil {
		t.Fatalf("%v: %v", action, res.err)
	}
	return res
}

func TestSlockOperationRun(t *testing.T) {
	recorded := makeSlock().Holds(slockInfo(slockCreated)).Obj()
	unrecorded := makeSlock().Obj()
	// ours is the lock a StateLock took and could not record: its Who,
	// taken after it was created.
	ours := &backendsv1alpha1.LockInfo{ID: "O", Operation: lockCheckOperation, Who: slockWho, Created: new(metav1.NewTime(slockCreated.Add(time.Minute)))}
	// earlier is the lock of an earlier StateLock of the same name.
	earlier := &backendsv1alpha1.LockInfo{ID: "E", Who: slockWho, Created: new(metav1.NewTime(slockCreated.Add(-time.Hour)))}
	alice := &backendsv1alpha1.LockInfo{ID: "H", Who: "alice@laptop", Created: new(metav1.NewTime(slockNow))}
	fresh := heldLock{id: "N", info: backendsv1alpha1.LockInfo{ID: "N", Who: slockWho, Created: new(metav1.NewTime(slockNow))}}
	unreachable := errors.New("dial tcp 127.0.0.1:1: connection refused")

	cases := map[string]struct {
		sl           *backendsv1alpha1.StateLock
		action       slockAction
		locker       scriptedLocker
		want         slockResult
		wantCalls    []string
		wantReleased *heldLock
		// wantNoLossSeen is the noLossSeen the release was given.
		wantNoLossSeen bool
	}{
		"hold, nothing recorded: take it": {
			sl: unrecorded, action: slockHold, locker: scriptedLocker{taken: &fresh},
			want: slockResult{action: slockHold, taken: &fresh}, wantCalls: []string{"acquire", "close"},
		},
		"hold, nothing recorded, another holds it: wait": {
			sl: unrecorded, action: slockHold, locker: scriptedLocker{takeHolder: alice},
			want: slockResult{action: slockHold, holder: alice}, wantCalls: []string{"acquire", "close"},
		},
		"hold, nothing recorded, an unreadable holder: wait": {
			sl: unrecorded, action: slockHold, locker: scriptedLocker{},
			want: slockResult{action: slockHold}, wantCalls: []string{"acquire", "close"},
		},
		"hold, nothing recorded, its own lock taken before a crash: adopted": {
			sl: unrecorded, action: slockHold, locker: scriptedLocker{takeHolder: ours},
			want:      slockResult{action: slockHold, taken: &heldLock{id: "O", info: *ours}},
			wantCalls: []string{"acquire", "close"},
		},
		"hold, nothing recorded, an earlier StateLock's lock: wait, not adopted": {
			sl: unrecorded, action: slockHold, locker: scriptedLocker{takeHolder: earlier},
			want: slockResult{action: slockHold, holder: earlier}, wantCalls: []string{"acquire", "close"},
		},
		"hold, nothing recorded, the take fails": {
			sl: unrecorded, action: slockHold, locker: scriptedLocker{takeErr: unreachable},
			want: slockResult{action: slockHold, err: unreachable}, wantCalls: []string{"acquire", "close"},
		},
		"hold, recorded and still held: kept, never taken": {
			sl: recorded, action: slockHold, locker: scriptedLocker{checked: lockCheck{kept: true}, taken: &fresh},
			want: slockResult{action: slockHold, kept: true}, wantCalls: []string{"check L", "close"},
		},
		"hold, recorded, the server cannot tell: unknown, never lost": {
			sl: recorded, action: slockHold, locker: scriptedLocker{checked: lockCheck{unknown: true, why: "no holder named"}},
			want: slockResult{action: slockHold, unknown: true, why: "no holder named"}, wantCalls: []string{"check L", "close"},
		},
		"hold, recorded and free (force unlocked): lost, never taken again": {
			sl: recorded, action: slockHold, locker: scriptedLocker{taken: &fresh},
			want: slockResult{action: slockHold}, wantCalls: []string{"check L", "close"},
		},
		"hold, recorded and another holds it: lost to it": {
			sl: recorded, action: slockHold, locker: scriptedLocker{checked: lockCheck{holder: alice}},
			want: slockResult{action: slockHold, holder: alice}, wantCalls: []string{"check L", "close"},
		},
		"hold, recorded, the check fails: neither kept nor lost": {
			sl: recorded, action: slockHold, locker: scriptedLocker{checked: lockCheck{holder: alice}, checkErr: unreachable},
			want: slockResult{action: slockHold, err: unreachable}, wantCalls: []string{"check L", "close"},
		},
		"release, recorded: released with the recorded LockInfo, no loss seen": {
			sl: recorded, action: slockRelease, locker: scriptedLocker{releaseResult: lockRelease{released: true}},
			want: slockResult{action: slockRelease, released: true}, wantCalls: []string{"release L", "close"},
			wantReleased: &heldLock{id: "L", info: *recorded.Status.LockInfo}, wantNoLossSeen: true,
		},
		"release, recorded but another holds it: left alone": {
			sl: recorded, action: slockRelease, locker: scriptedLocker{releaseResult: lockRelease{holder: alice}},
			want: slockResult{action: slockRelease, holder: alice}, wantCalls: []string{"release L", "close"},
			wantReleased: &heldLock{id: "L", info: *recorded.Status.LockInfo}, wantNoLossSeen: true,
		},
		"release, recorded, the server allows no safe release: withheld": {
			sl: recorded, action: slockRelease, locker: scriptedLocker{releaseResult: lockRelease{withheld: "the server refused its UNLOCK (HTTP 409 Conflict)"}},
			want:      slockResult{action: slockRelease, withheld: "the server refused its UNLOCK (HTTP 409 Conflict)"},
			wantCalls: []string{"release L", "close"}, wantReleased: &heldLock{id: "L", info: *recorded.Status.LockInfo}, wantNoLossSeen: true,
		},
		"release, unrecorded but owned: released as read": {
			sl: unrecorded, action: slockRelease, locker: scriptedLocker{holderInfo: ours, releaseResult: lockRelease{released: true}},
			want: slockResult{action: slockRelease, released: true}, wantCalls: []string{"holder", "release O", "close"},
			wantReleased: &heldLock{id: "O", info: *ours},
		},
		"release, unrecorded, an earlier StateLock's lock: left alone": {
			sl: unrecorded, action: slockRelease, locker: scriptedLocker{holderInfo: earlier},
			want: slockResult{action: slockRelease, holder: earlier}, wantCalls: []string{"holder", "close"},
		},
		"release, unrecorded, the holder cannot be read: not released": {
			sl: unrecorded, action: slockRelease, locker: scriptedLocker{holderInfo: ours, holderErr: unreachable},
			want: slockResult{action: slockRelease, err: unreachable}, wantCalls: []string{"holder", "close"},
		},
		"release, the release fails": {
			sl: recorded, action: slockRelease, locker: scriptedLocker{releaseErr: unreachable},
			want: slockResult{action: slockRelease, err: unreachable}, wantCalls: []string{"release L", "close"},
			wantReleased: &heldLock{id: "L", info: *recorded.Status.LockInfo}, wantNoLossSeen: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := tc.locker
			op := slockOp(tc.sl, tc.action)
			got := op.run(t.Context(), &l)
			opts := cmp.Options{cmp.AllowUnexported(slockResult{}, heldLock{}), cmpopts.EquateErrors()}
			if diff := cmp.Diff(tc.want, got, opts); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCalls, l.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantReleased, l.released, opts); diff != "" {
				t.Errorf("lock released (-want +got):\n%s", diff)
			}
			if l.noLossSeen != tc.wantNoLossSeen {
				t.Errorf("release got noLossSeen %v, want %v", l.noLossSeen, tc.wantNoLossSeen)
			}
			if l.took != nil && *l.took != op.take {
				t.Errorf("acquire got %+v, want the operation's LockInfo %+v", *l.took, op.take)
			}
			if l.noDeadline {
				t.Errorf("a locker call ran without the probe's deadline")
			}
		})
	}
}

func TestHeldFromStatus(t *testing.T) {
	cases := map[string]struct {
		sl   *backendsv1alpha1.StateLock
		want heldLock
	}{
		"nothing held": {sl: makeSlock().Obj()},
		"held": {
			sl: makeSlock().Holds(slockInfo(slockCreated)).Obj(),
			want: heldLock{id: "L", info: backendsv1alpha1.LockInfo{
				ID: "L", Operation: lockCheckOperation, Info: "release freeze", Who: slockWho, Created: new(metav1.NewTime(slockCreated)),
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := heldFromStatus(tc.sl)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(heldLock{})); diff != "" {
				t.Errorf("heldFromStatus (-want +got):\n%s", diff)
			}
			if got.info.Created != nil && got.info.Created == tc.sl.Status.LockInfo.Created {
				t.Errorf("heldFromStatus shares the status's LockInfo, which the reconcile goes on changing")
			}
		})
	}
}

// TestLockOwnedBySnapshot checks that the ownership an operation checks is
// the StateLock's as it was when the operation was built: the reconcile
// goes on changing the object while the operation runs.
func TestLockOwnedBySnapshot(t *testing.T) {
	sl := makeSlock().Holds(slockInfo(slockCreated)).Obj()
	owns := lockOwnedBy(sl)
	sl.Status.LockID = "changed"
	if !owns(&backendsv1alpha1.LockInfo{ID: "L"}) || owns(&backendsv1alpha1.LockInfo{ID: "changed"}) {
		t.Errorf("lockOwnedBy follows later changes of the StateLock")
	}
}

// TestStateLockInfoRoundTrip checks that the LockInfo a StateLock takes its
// lock with, written to status.lockInfo, stored by the API server and read
// back, gives back the very JSON body the lock was taken with: the body a
// server that accepts only the exact LockInfo needs to release it.
func TestStateLockInfoRoundTrip(t *testing.T) {
	sl := makeSlock().Obj()
	now := time.Date(2026, 3, 1, 12, 0, 0, 987654321, time.FixedZone("UTC+8", 8*3600))
	info := newStateLockInfo(sl, now)
	if _, err := uuid.Parse(info.ID); err != nil {
		t.Errorf("lock ID %q is not a UUID: %v", info.ID, err)
	}
	want := stateclient.LockInfo{ID: info.ID, Operation: lockCheckOperation, Info: "release freeze", Who: slockWho,
		Created: time.Date(2026, 3, 1, 4, 0, 0, 0, time.UTC)}
	if diff := cmp.Diff(want, info); diff != "" {
		t.Errorf("newStateLockInfo (-want +got):\n%s", diff)
	}
	if again := newStateLockInfo(sl, now.Add(time.Hour)); again.ID != info.ID {
		t.Errorf("a take again of the same generation has lock ID %s, want %s: an unrecorded lock is found by its ID", again.ID, info.ID)
	}

	// Through status, as the API server stores and returns it.
	sl.Status.LockInfo = lockInfo(&info)
	data, err := json.Marshal(sl)
	if err != nil {
		t.Fatal(err)
	}
	var stored backendsv1alpha1.StateLock
	if err := json.Unmarshal(data, &stored); err != nil {
		t.Fatal(err)
	}
	// metav1.Time reads a time in the local zone, whichever it is.
	stored.Status.LockInfo.Created.Time = stored.Status.LockInfo.Created.In(time.FixedZone("UTC-5", -5*3600))
	sent, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	back, err := json.Marshal(clientLockInfo(*stored.Status.LockInfo))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, sent) {
		t.Errorf("the LockInfo read back from status is\n%s\nwant the body the lock was taken with\n%s", back, sent)
	}
}

// TestStateLockID checks which StateLocks' takes share a lock ID: the
// takes of one StateLock at one generation and reacquire value do (a lock
// it took and could not record is recognised by its ID, also on a server
// that rewrites Who), and a take after a loss (a spec change, a new
// reacquire value) or by another object of the same name does not.
func TestStateLockID(t *testing.T) {
	base := stateLockID(makeSlock().Obj())
	cases := map[string]struct {
		sl   *backendsv1alpha1.StateLock
		same bool
	}{
		"the same object, later":          {sl: makeSlock().Created(slockCreated.Add(time.Hour)).Obj(), same: true},
		"a spec change":                   {sl: makeSlock().Generation(2).Obj()},
		"a reacquire value":               {sl: makeSlock().Annotation(backendsv1alpha1.ReacquireAnnotation, "1").Obj()},
		"another object of the same name": {sl: makeSlock().UID("uid-freeze-2").Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := stateLockID(tc.sl); (got == base) != tc.same {
				t.Errorf("stateLockID = %s, base %s; want the same: %v", got, base, tc.same)
			}
			if _, err := uuid.Parse(stateLockID(tc.sl)); err != nil {
				t.Errorf("lock ID is not a UUID: %v", err)
			}
		})
	}
}

// TestOwnsAnUnrecordedLockByItsID checks that a lock a StateLock took and
// did not record is its own by its ID alone, whatever Who the server shows
// (GitLab shows its user).
func TestOwnsAnUnrecordedLockByItsID(t *testing.T) {
	sl := makeSlock().Obj()
	id := stateLockID(sl)
	cases := map[string]struct {
		holder *backendsv1alpha1.LockInfo
		want   bool
	}{
		"its ID, Who rewritten":                                 {holder: &backendsv1alpha1.LockInfo{ID: id, Who: "platform-bot"}, want: true},
		"another ID, Who rewritten":                             {holder: &backendsv1alpha1.LockInfo{ID: "other", Who: "platform-bot"}},
		"another ID, Who naming it, taken after it was created": {holder: &backendsv1alpha1.LockInfo{ID: "other", Who: slockWho, Created: new(metav1.NewTime(slockCreated.Add(time.Minute)))}, want: true},
		"nothing held":                                          {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ownsLock(sl, tc.holder); got != tc.want {
				t.Errorf("ownsLock = %v, want %v", got, tc.want)
			}
		})
	}
}
