package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// Times of the StateLock tables: the object is created at slockCreated
// and reconciled at slockNow.
var (
	slockCreated = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	slockNow     = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

// slockWho is the Who of the LockInfo of the StateLock makeSlock builds.
const slockWho = "backend-operator/team-a/freeze"

// slockBackend names the backend of the StateLock tables in messages.
const slockBackend = "HttpBackend app"

// makeSlock returns a StateLock team-a/freeze of generation 1 on
// HttpBackend app, created at slockCreated, holding nothing.
func makeSlock() *builders.StateLockWrapper { return makeNamedSlock("freeze", "default") }

// makeNamedSlock returns makeSlock's StateLock named name, of workspace
// ws.
func makeNamedSlock(name, ws string) *builders.StateLockWrapper {
	return builders.MakeStateLock(name, "team-a", backendsv1alpha1.HttpBackendKind, "app").
		UID(types.UID("uid-" + name)).Generation(1).Created(slockCreated).Workspace(ws).Reason("release freeze")
}

// slockInfo is the LockInfo of lock "L", taken by makeSlock's StateLock at
// since: what status records while it holds the lock (Holds).
func slockInfo(since time.Time) backendsv1alpha1.LockInfo {
	return backendsv1alpha1.LockInfo{ID: "L", Operation: lockCheckOperation, Info: "release freeze", Who: slockWho, Created: new(metav1.NewTime(since))}
}

// slockLocked is the Locked condition a StateLock had before a reconcile,
// observed at generation observed, last changed at changed.
func slockLocked(status metav1.ConditionStatus, reason string, observed int64, changed time.Time) metav1.Condition {
	return metav1.Condition{
		Type: backendsv1alpha1.LockedCondition, Status: status, Reason: reason, Message: "before",
		ObservedGeneration: observed, LastTransitionTime: metav1.NewTime(changed),
	}
}

// slockLost is the Locked condition of a lock lost at generation observed.
func slockLost(observed int64) metav1.Condition {
	return slockLocked(metav1.ConditionFalse, backendsv1alpha1.LockLostReason, observed, slockNow)
}

// lockedCond is a Locked condition of generation 1 in the tables.
func lockedCond(status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: backendsv1alpha1.LockedCondition, Status: status, Reason: reason, Message: message, ObservedGeneration: 1}
}

func TestPlanStateLock(t *testing.T) {
	cases := map[string]struct {
		sl   *backendsv1alpha1.StateLock
		want slockAction
	}{
		"nothing held: take it": {
			sl: makeSlock().Obj(), want: slockHold,
		},
		"holding: check it": {
			sl: makeSlock().Holds(slockInfo(slockCreated)).Condition(slockLocked("True", "LockAcquired", 1, slockCreated)).Obj(), want: slockHold,
		},
		"holding until later: check it": {
			sl: makeSlock().Until(slockNow.Add(time.Second)).Holds(slockInfo(slockCreated)).Obj(), want: slockHold,
		},
		"waiting: try again": {
			sl: makeSlock().Condition(slockLocked("False", "WaitingForLock", 1, slockCreated)).WaitsFor(&backendsv1alpha1.LockInfo{ID: "H"}).Obj(), want: slockHold,
		},
		"expired with a lock: release it": {
			sl: makeSlock().Until(slockNow.Add(-time.Minute)).Holds(slockInfo(slockCreated)).Obj(), want: slockRelease,
		},
		"expiring this instant with a lock: release it": {
			sl: makeSlock().Until(slockNow).Holds(slockInfo(slockCreated)).Obj(), want: slockRelease,
		},
		"expired without a lock: nothing": {
			sl: makeSlock().Until(slockNow.Add(-time.Minute)).Obj(), want: slockIdle,
		},
		"expired after losing the lock: nothing": {
			sl: makeSlock().Until(slockNow.Add(-time.Minute)).Condition(slockLost(1)).Obj(), want: slockIdle,
		},
		"lost for this generation: nothing": {
			sl: makeSlock().Generation(3).Condition(slockLost(3)).Obj(), want: slockIdle,
		},
		"lost, the reacquire value already acted on: nothing": {
			sl: makeSlock().Annotation(backendsv1alpha1.ReacquireAnnotation, "a1").ReacquireRequest("a1").Condition(slockLost(1)).Obj(), want: slockIdle,
		},
		"lost for an older generation (spec changed): take it": {
			sl: makeSlock().Generation(3).Condition(slockLost(2)).Obj(), want: slockHold,
		},
		"lost, a new reacquire value: take it": {
			sl: makeSlock().Annotation(backendsv1alpha1.ReacquireAnnotation, "a2").ReacquireRequest("a1").Condition(slockLost(1)).Obj(), want: slockHold,
		},
		"lost, a first reacquire value: take it": {
			sl: makeSlock().Annotation(backendsv1alpha1.ReacquireAnnotation, "a1").Condition(slockLost(1)).Obj(), want: slockHold,
		},
		"lost, the reacquire annotation removed: take it": {
			sl: makeSlock().ReacquireRequest("a1").Condition(slockLost(1)).Obj(), want: slockHold,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := planStateLock(tc.sl, slockNow); got != tc.want {
				t.Errorf("planStateLock() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestExpiredAndLockLost(t *testing.T) {
	cases := map[string]struct {
		sl                    *backendsv1alpha1.StateLock
		wantExpired, wantLost bool
	}{
		"no until, nothing recorded":   {sl: makeSlock().Obj()},
		"until later":                  {sl: makeSlock().Until(slockNow.Add(time.Nanosecond)).Obj()},
		"until now":                    {sl: makeSlock().Until(slockNow).Obj(), wantExpired: true},
		"until passed":                 {sl: makeSlock().Until(slockNow.Add(-time.Hour)).Obj(), wantExpired: true},
		"lost for this generation":     {sl: makeSlock().Condition(slockLost(1)).Obj(), wantLost: true},
		"lost for an older generation": {sl: makeSlock().Generation(2).Condition(slockLost(1)).Obj()},
		"lost, value acted on":         {sl: makeSlock().Annotation(backendsv1alpha1.ReacquireAnnotation, "x").ReacquireRequest("x").Condition(slockLost(1)).Obj(), wantLost: true},
		"lost, a new value":            {sl: makeSlock().Annotation(backendsv1alpha1.ReacquireAnnotation, "y").ReacquireRequest("x").Condition(slockLost(1)).Obj()},
		"waiting is not lost":          {sl: makeSlock().Condition(slockLocked("False", "WaitingForLock", 1, slockNow)).Obj()},
		"expired is not lost":          {sl: makeSlock().Condition(slockLocked("False", "Expired", 1, slockNow)).Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := expired(tc.sl, slockNow); got != tc.wantExpired {
				t.Errorf("expired() = %v, want %v", got, tc.wantExpired)
			}
			if got := lockLost(tc.sl); got != tc.wantLost {
				t.Errorf("lockLost() = %v, want %v", got, tc.wantLost)
			}
		})
	}
}

func TestApplySlockResult(t *testing.T) {
	const reacquireNote = " The StateLock does not take it again until its spec changes or its backends.infrastate.io/reacquire annotation gets a new value."
	heldSince, until, created := slockCreated, slockNow.Add(time.Hour), slockNow.Add(-time.Minute)
	alice := &backendsv1alpha1.LockInfo{ID: "H", Operation: "OperationTypeApply", Who: "alice@laptop", Created: new(metav1.NewTime(created))}
	taken := heldLock{id: "L2", info: backendsv1alpha1.LockInfo{ID: "L2", Operation: lockCheckOperation, Info: "release freeze", Who: slockWho, Created: new(metav1.NewTime(slockNow))}}
	unreachable := fmt.Errorf("dial tcp 127.0.0.1:1: %w", cos.ErrUnreachable)
	unauthorized := fmt.Errorf("lock: %w", stateclient.ErrUnauthorized)
	// holding is the status of a StateLock holding lock L since heldSince.
	holding := func() backendsv1alpha1.StateLockStatus { return makeSlock().Holds(slockInfo(heldSince)).Obj().Status }

	cases := map[string]struct {
		sl   *backendsv1alpha1.StateLock
		res  slockResult
		want backendsv1alpha1.StateLockStatus
	}{
		"a failed check keeps the lock, Locked Unknown": {
			sl:  makeSlock().Holds(slockInfo(heldSince)).Condition(slockLocked("True", "LockAcquired", 1, heldSince)).Obj(),
			res: slockResult{action: slockHold, err: unreachable},
			want: func() backendsv1alpha1.StateLockStatus {
				st := holding()
				st.Conditions = []metav1.Condition{lockedCond("Unknown", "Unreachable",
					"Cannot check that lock L of HttpBackend app is still held, tried again shortly: "+probeFailure(everyKindsFailures, unreachable).Message)}
				return st
			}(),
		},
		"a failed take, Locked Unknown with the failure's reason": {
			sl:  makeSlock().Obj(),
			res: slockResult{action: slockHold, err: unauthorized},
			want: backendsv1alpha1.StateLockStatus{Conditions: []metav1.Condition{lockedCond("Unknown", "Unauthorized",
				"Cannot take the lock of HttpBackend app, tried again shortly: "+probeFailure(everyKindsFailures, unauthorized).Message)}},
		},
		"a failed take while waiting keeps the holder": {
			sl:  makeSlock().WaitsFor(alice).Condition(slockLocked("False", "WaitingForLock", 1, created)).Obj(),
			res: slockResult{action: slockHold, err: unreachable},
			want: backendsv1alpha1.StateLockStatus{Holder: alice, Conditions: []metav1.Condition{lockedCond("Unknown", "Unreachable",
				"Cannot take the lock of HttpBackend app, tried again shortly: "+probeFailure(everyKindsFailures, unreachable).Message)}},
		},
		"a failed release keeps the lock ID": {
			sl:  makeSlock().Until(slockNow.Add(-time.Minute)).Holds(slockInfo(heldSince)).Condition(slockLocked("True", "LockAcquired", 1, heldSince)).Obj(),
			res: slockResult{action: slockRelease, err: unreachable},
			want: func() backendsv1alpha1.StateLockStatus {
				st := holding()
				st.Conditions = []metav1.Condition{lockedCond("Unknown", "Unreachable",
					"Cannot release lock L of HttpBackend app, tried again shortly: "+probeFailure(everyKindsFailures, unreachable).Message)}
				return st
			}(),
		},
		"taken: records the lock and clears the holder waited for": {
			sl:  makeSlock().Until(until).WaitsFor(alice).Condition(slockLocked("False", "WaitingForLock", 1, created)).Obj(),
			res: slockResult{action: slockHold, taken: &taken},
			want: backendsv1alpha1.StateLockStatus{
				LockID: "L2", LockInfo: taken.info.DeepCopy(), HeldSince: new(metav1.NewTime(slockNow)),
				Conditions: []metav1.Condition{lockedCond("True", "LockAcquired",
					"Holds lock L2 of HttpBackend app since 2026-03-01T12:00:00Z, until 2026-03-01T13:00:00Z")},
			},
		},
		"taken without a creation time: no heldSince": {
			sl:  makeSlock().Obj(),
			res: slockResult{action: slockHold, taken: &heldLock{id: "L3", info: backendsv1alpha1.LockInfo{ID: "L3", Who: slockWho}}},
			want: backendsv1alpha1.StateLockStatus{
				LockID: "L3", LockInfo: &backendsv1alpha1.LockInfo{ID: "L3", Who: slockWho},
				Conditions: []metav1.Condition{lockedCond("True", "LockAcquired", "Holds lock L3 of HttpBackend app")},
			},
		},
		"kept: still held, Locked True again after a failed check, no holder": {
			sl:  makeSlock().Holds(slockInfo(heldSince)).WaitsFor(alice).Condition(slockLocked("Unknown", "Unreachable", 1, created)).Obj(),
			res: slockResult{action: slockHold, kept: true},
			want: func() backendsv1alpha1.StateLockStatus {
				st := holding()
				st.Conditions = []metav1.Condition{lockedCond("True", "LockAcquired", "Holds lock L of HttpBackend app since 2026-03-01T10:00:00Z")}
				return st
			}(),
		},
		"lost to another holder: records the reacquire value acted on": {
			sl:  makeSlock().Annotation(backendsv1alpha1.ReacquireAnnotation, "a2").ReacquireRequest("a1").Holds(slockInfo(heldSince)).Condition(slockLocked("True", "LockAcquired", 1, heldSince)).Obj(),
			res: slockResult{action: slockHold, holder: alice},
			want: backendsv1alpha1.StateLockStatus{
				Holder: alice, ReacquireRequest: "a2",
				Conditions: []metav1.Condition{lockedCond("False", "LockLost",
					"Lost lock L of HttpBackend app: lock H held by alice@laptop since 2026-03-01T11:59:00Z now holds it (taken after a force unlock)."+reacquireNote)},
			},
		},
		"lost to nobody: released by someone else": {
			sl:  makeSlock().ReacquireRequest("a1").Holds(slockInfo(heldSince)).Condition(slockLocked("True", "LockAcquired", 1, heldSince)).Obj(),
			res: slockResult{action: slockHold},
			want: backendsv1alpha1.StateLockStatus{
				Conditions: []metav1.Condition{lockedCond("False", "LockLost",
					"Lost lock L of HttpBackend app: it was released by someone else (a force unlock)."+reacquireNote)},
			},
		},
		"waiting behind a holder": {
			sl:  makeSlock().Obj(),
			res: slockResult{action: slockHold, holder: alice},
			want: backendsv1alpha1.StateLockStatus{
				Holder: alice,
				Conditions: []metav1.Condition{lockedCond("False", "WaitingForLock",
					"Waiting for the lock of HttpBackend app: lock H held by alice@laptop since 2026-03-01T11:59:00Z. The StateLock takes it as soon as it is free, never by force.")},
			},
		},
		"waiting behind a holder that cannot be read": {
			sl:  makeSlock().WaitsFor(alice).Obj(),
			res: slockResult{action: slockHold},
			want: backendsv1alpha1.StateLockStatus{
				Conditions: []metav1.Condition{lockedCond("False", "WaitingForLock",
					"Waiting for the lock of HttpBackend app: the lock is held by a holder whose lock information cannot be read. The StateLock takes it as soon as it is free, never by force.")},
			},
		},
		"released at expiry": {
			sl:  makeSlock().Until(slockNow.Add(-time.Minute)).Holds(slockInfo(heldSince)).Condition(slockLocked("True", "LockAcquired", 1, heldSince)).Obj(),
			res: slockResult{action: slockRelease, released: true},
			want: backendsv1alpha1.StateLockStatus{
				Conditions: []metav1.Condition{lockedCond("False", "Expired", "Expired at 2026-03-01T11:59:00Z: released lock L of HttpBackend app.")},
			},
		},
		"expiry finding the lock no longer its own": {
			sl:  makeSlock().Until(slockNow.Add(-time.Minute)).Holds(slockInfo(heldSince)).Condition(slockLocked("True", "LockAcquired", 1, heldSince)).Obj(),
			res: slockResult{action: slockRelease, holder: alice},
			want: backendsv1alpha1.StateLockStatus{
				Conditions: []metav1.Condition{lockedCond("False", "Expired",
					"Expired at 2026-03-01T11:59:00Z. Lock L was no longer held by the StateLock: nothing to release.")},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			applySlockResult(tc.sl, tc.res, slockBackend, everyKindsFailures)
			if diff := cmp.Diff(tc.want, tc.sl.Status, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApplySlockResultCopiesTheLock checks that the status does not share
// the result's LockInfo: the result stays with the prober, which may hand
// it to the next reconcile too.
func TestApplySlockResultCopiesTheLock(t *testing.T) {
	sl := makeSlock().Obj()
	res := slockResult{action: slockHold, taken: &heldLock{id: "L", info: backendsv1alpha1.LockInfo{ID: "L", Created: new(metav1.NewTime(slockNow))}}}
	applySlockResult(sl, res, slockBackend, everyKindsFailures)
	res.taken.info.Created.Time = slockCreated
	res.taken.info.ID = "changed"
	if sl.Status.LockInfo.ID != "L" || !sl.Status.HeldSince.Equal(new(metav1.NewTime(slockNow))) || !sl.Status.LockInfo.Created.Equal(new(metav1.NewTime(slockNow))) {
		t.Errorf("status shares the result's LockInfo: lockInfo %+v, heldSince %v", sl.Status.LockInfo, sl.Status.HeldSince)
	}
}

func TestHeldAndExpiredObservations(t *testing.T) {
	cases := map[string]struct {
		obs  func() conditions.Observation
		want conditions.Observation
	}{
		"held, no until": {
			obs: func() conditions.Observation {
				return heldObservation(makeSlock().Holds(slockInfo(slockCreated)).Obj(), slockBackend)
			},
			want: conditions.Observation{Status: "True", Reason: "LockAcquired", Message: "Holds lock L of HttpBackend app since 2026-03-01T10:00:00Z"},
		},
		"held until, in UTC whatever the zone": {
			obs: func() conditions.Observation {
				sl := makeSlock().Until(slockNow.In(time.FixedZone("UTC+8", 8*3600))).Holds(slockInfo(slockCreated)).Obj()
				return heldObservation(sl, slockBackend)
			},
			want: conditions.Observation{Status: "True", Reason: "LockAcquired", Message: "Holds lock L of HttpBackend app since 2026-03-01T10:00:00Z, until 2026-03-01T12:00:00Z"},
		},
		"held, no heldSince": {
			obs: func() conditions.Observation {
				sl := makeSlock().Obj()
				sl.Status.LockID = "L"
				return heldObservation(sl, slockBackend)
			},
			want: conditions.Observation{Status: "True", Reason: "LockAcquired", Message: "Holds lock L of HttpBackend app"},
		},
		"expired, a lock released": {
			obs: func() conditions.Observation {
				return expiredObservation(makeSlock().Until(slockNow).Obj(), "L", slockBackend)
			},
			want: conditions.Observation{Status: "False", Reason: "Expired", Message: "Expired at 2026-03-01T12:00:00Z: released lock L of HttpBackend app."},
		},
		"expired, nothing held": {
			obs: func() conditions.Observation {
				return expiredObservation(makeSlock().Until(slockNow).Obj(), "", slockBackend)
			},
			want: conditions.Observation{Status: "False", Reason: "Expired", Message: "Expired at 2026-03-01T12:00:00Z."},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.obs(), cmp.AllowUnexported(conditions.Observation{})); diff != "" {
				t.Errorf("observation (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDescribeLockHolder(t *testing.T) {
	cases := map[string]struct {
		holder *backendsv1alpha1.LockInfo
		want   string
	}{
		"unreadable": {want: "the lock is held by a holder whose lock information cannot be read"},
		"ID only":    {holder: &backendsv1alpha1.LockInfo{ID: "H"}, want: "lock H"},
		"ID and Who": {holder: &backendsv1alpha1.LockInfo{ID: "H", Who: "alice"}, want: "lock H held by alice"},
		"all":        {holder: &backendsv1alpha1.LockInfo{ID: "H", Who: "alice", Created: new(metav1.NewTime(slockNow))}, want: "lock H held by alice since 2026-03-01T12:00:00Z"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := describeLockHolder(tc.holder); got != tc.want {
				t.Errorf("describeLockHolder() = %q, want %q", got, tc.want)
			}
		})
	}
}
