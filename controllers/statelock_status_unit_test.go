package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/stateclient"
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

// slockBuilder builds a StateLock for the unit tables.
type slockBuilder struct{ obj *backendsv1alpha1.StateLock }

// makeSlock returns a StateLock team-a/freeze of generation 1 on
// HttpBackend app, created at slockCreated, holding nothing.
func makeSlock() *slockBuilder {
	return &slockBuilder{obj: &backendsv1alpha1.StateLock{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "team-a", Name: "freeze", UID: "uid-freeze", Generation: 1,
			CreationTimestamp: metav1.NewTime(slockCreated),
		},
		Spec: backendsv1alpha1.StateLockSpec{
			BackendRef: backendsv1alpha1.BackendReference{Kind: "HttpBackend", Name: "app"},
			Workspace:  "default", Reason: "release freeze",
		},
	}}
}

// generation sets metadata.generation.
func (b *slockBuilder) generation(g int64) *slockBuilder {
	b.obj.Generation = g
	return b
}

// until sets spec.until.
func (b *slockBuilder) until(t time.Time) *slockBuilder {
	u := metav1.NewTime(t)
	b.obj.Spec.Until = &u
	return b
}

// reacquire sets the reacquire annotation.
func (b *slockBuilder) reacquire(v string) *slockBuilder {
	b.obj.Annotations = map[string]string{backendsv1alpha1.ReacquireAnnotation: v}
	return b
}

// holds records lock "L" as held since since.
func (b *slockBuilder) holds(since time.Time) *slockBuilder {
	const id = "L"
	s := metav1.NewTime(since)
	b.obj.Status.LockID, b.obj.Status.HeldSince = id, &s
	b.obj.Status.LockInfo = &backendsv1alpha1.LockInfo{ID: id, Operation: lockCheckOperation, Info: "release freeze", Who: slockWho, Created: &s}
	return b
}

// waitsFor records holder as the holder the StateLock waits for.
func (b *slockBuilder) waitsFor(holder *backendsv1alpha1.LockInfo) *slockBuilder {
	b.obj.Status.Holder = holder
	return b
}

// reacquireRequest sets status.reacquireRequest.
func (b *slockBuilder) reacquireRequest(v string) *slockBuilder {
	b.obj.Status.ReacquireRequest = v
	return b
}

// locked sets the Locked condition, observed at generation observed, last
// changed at changed.
func (b *slockBuilder) locked(status metav1.ConditionStatus, reason string, observed int64, changed time.Time) *slockBuilder {
	b.obj.Status.Conditions = append(b.obj.Status.Conditions, metav1.Condition{
		Type: backendsv1alpha1.LockedCondition, Status: status, Reason: reason, Message: "before",
		ObservedGeneration: observed, LastTransitionTime: metav1.NewTime(changed),
	})
	return b
}

// lost records the lock as lost at generation observed.
func (b *slockBuilder) lost(observed int64) *slockBuilder {
	return b.locked(metav1.ConditionFalse, backendsv1alpha1.LockLostReason, observed, slockNow)
}

func (b *slockBuilder) build() *backendsv1alpha1.StateLock { return b.obj }

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
			sl: makeSlock().build(), want: slockHold,
		},
		"holding: check it": {
			sl: makeSlock().holds(slockCreated).locked("True", "LockAcquired", 1, slockCreated).build(), want: slockHold,
		},
		"holding until later: check it": {
			sl: makeSlock().until(slockNow.Add(time.Second)).holds(slockCreated).build(), want: slockHold,
		},
		"waiting: try again": {
			sl: makeSlock().locked("False", "WaitingForLock", 1, slockCreated).waitsFor(&backendsv1alpha1.LockInfo{ID: "H"}).build(), want: slockHold,
		},
		"expired with a lock: release it": {
			sl: makeSlock().until(slockNow.Add(-time.Minute)).holds(slockCreated).build(), want: slockRelease,
		},
		"expiring this instant with a lock: release it": {
			sl: makeSlock().until(slockNow).holds(slockCreated).build(), want: slockRelease,
		},
		"expired without a lock: nothing": {
			sl: makeSlock().until(slockNow.Add(-time.Minute)).build(), want: slockIdle,
		},
		"expired after losing the lock: nothing": {
			sl: makeSlock().until(slockNow.Add(-time.Minute)).lost(1).build(), want: slockIdle,
		},
		"lost for this generation: nothing": {
			sl: makeSlock().generation(3).lost(3).build(), want: slockIdle,
		},
		"lost, the reacquire value already acted on: nothing": {
			sl: makeSlock().reacquire("a1").reacquireRequest("a1").lost(1).build(), want: slockIdle,
		},
		"lost for an older generation (spec changed): take it": {
			sl: makeSlock().generation(3).lost(2).build(), want: slockHold,
		},
		"lost, a new reacquire value: take it": {
			sl: makeSlock().reacquire("a2").reacquireRequest("a1").lost(1).build(), want: slockHold,
		},
		"lost, a first reacquire value: take it": {
			sl: makeSlock().reacquire("a1").lost(1).build(), want: slockHold,
		},
		"lost, the reacquire annotation removed: take it": {
			sl: makeSlock().reacquireRequest("a1").lost(1).build(), want: slockHold,
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
		"no until, nothing recorded":   {sl: makeSlock().build()},
		"until later":                  {sl: makeSlock().until(slockNow.Add(time.Nanosecond)).build()},
		"until now":                    {sl: makeSlock().until(slockNow).build(), wantExpired: true},
		"until passed":                 {sl: makeSlock().until(slockNow.Add(-time.Hour)).build(), wantExpired: true},
		"lost for this generation":     {sl: makeSlock().lost(1).build(), wantLost: true},
		"lost for an older generation": {sl: makeSlock().generation(2).lost(1).build()},
		"lost, value acted on":         {sl: makeSlock().reacquire("x").reacquireRequest("x").lost(1).build(), wantLost: true},
		"lost, a new value":            {sl: makeSlock().reacquire("y").reacquireRequest("x").lost(1).build()},
		"waiting is not lost":          {sl: makeSlock().locked("False", "WaitingForLock", 1, slockNow).build()},
		"expired is not lost":          {sl: makeSlock().locked("False", "Expired", 1, slockNow).build()},
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
	alice := &backendsv1alpha1.LockInfo{ID: "H", Operation: "OperationTypeApply", Who: "alice@laptop", Created: metaTime(created)}
	taken := heldLock{id: "L2", info: backendsv1alpha1.LockInfo{ID: "L2", Operation: lockCheckOperation, Info: "release freeze", Who: slockWho, Created: metaTime(slockNow)}}
	unreachable := fmt.Errorf("dial tcp 127.0.0.1:1: %w", cos.ErrUnreachable)
	unauthorized := fmt.Errorf("lock: %w", stateclient.ErrUnauthorized)
	// holding is the status of a StateLock holding lock L since heldSince.
	holding := func() backendsv1alpha1.StateLockStatus { return makeSlock().holds(heldSince).build().Status }

	cases := map[string]struct {
		sl   *backendsv1alpha1.StateLock
		res  slockResult
		want backendsv1alpha1.StateLockStatus
	}{
		"a failed check keeps the lock, Locked Unknown": {
			sl:  makeSlock().holds(heldSince).locked("True", "LockAcquired", 1, heldSince).build(),
			res: slockResult{action: slockHold, err: unreachable},
			want: func() backendsv1alpha1.StateLockStatus {
				st := holding()
				st.Conditions = []metav1.Condition{lockedCond("Unknown", "Unreachable",
					"Cannot check that lock L of HttpBackend app is still held, tried again shortly: "+probeFailure(everyKindsFailures, unreachable).Message)}
				return st
			}(),
		},
		"a failed take, Locked Unknown with the failure's reason": {
			sl:  makeSlock().build(),
			res: slockResult{action: slockHold, err: unauthorized},
			want: backendsv1alpha1.StateLockStatus{Conditions: []metav1.Condition{lockedCond("Unknown", "Unauthorized",
				"Cannot take the lock of HttpBackend app, tried again shortly: "+probeFailure(everyKindsFailures, unauthorized).Message)}},
		},
		"a failed take while waiting keeps the holder": {
			sl:  makeSlock().waitsFor(alice).locked("False", "WaitingForLock", 1, created).build(),
			res: slockResult{action: slockHold, err: unreachable},
			want: backendsv1alpha1.StateLockStatus{Holder: alice, Conditions: []metav1.Condition{lockedCond("Unknown", "Unreachable",
				"Cannot take the lock of HttpBackend app, tried again shortly: "+probeFailure(everyKindsFailures, unreachable).Message)}},
		},
		"a failed release keeps the lock ID": {
			sl:  makeSlock().until(slockNow.Add(-time.Minute)).holds(heldSince).locked("True", "LockAcquired", 1, heldSince).build(),
			res: slockResult{action: slockRelease, err: unreachable},
			want: func() backendsv1alpha1.StateLockStatus {
				st := holding()
				st.Conditions = []metav1.Condition{lockedCond("Unknown", "Unreachable",
					"Cannot release lock L of HttpBackend app, tried again shortly: "+probeFailure(everyKindsFailures, unreachable).Message)}
				return st
			}(),
		},
		"taken: records the lock and clears the holder waited for": {
			sl:  makeSlock().until(until).waitsFor(alice).locked("False", "WaitingForLock", 1, created).build(),
			res: slockResult{action: slockHold, taken: &taken},
			want: backendsv1alpha1.StateLockStatus{
				LockID: "L2", LockInfo: taken.info.DeepCopy(), HeldSince: metaTime(slockNow),
				Conditions: []metav1.Condition{lockedCond("True", "LockAcquired",
					"Holds lock L2 of HttpBackend app since 2026-03-01T12:00:00Z, until 2026-03-01T13:00:00Z")},
			},
		},
		"taken without a creation time: no heldSince": {
			sl:  makeSlock().build(),
			res: slockResult{action: slockHold, taken: &heldLock{id: "L3", info: backendsv1alpha1.LockInfo{ID: "L3", Who: slockWho}}},
			want: backendsv1alpha1.StateLockStatus{
				LockID: "L3", LockInfo: &backendsv1alpha1.LockInfo{ID: "L3", Who: slockWho},
				Conditions: []metav1.Condition{lockedCond("True", "LockAcquired", "Holds lock L3 of HttpBackend app")},
			},
		},
		"kept: still held, Locked True again after a failed check, no holder": {
			sl:  makeSlock().holds(heldSince).waitsFor(alice).locked("Unknown", "Unreachable", 1, created).build(),
			res: slockResult{action: slockHold, kept: true},
			want: func() backendsv1alpha1.StateLockStatus {
				st := holding()
				st.Conditions = []metav1.Condition{lockedCond("True", "LockAcquired", "Holds lock L of HttpBackend app since 2026-03-01T10:00:00Z")}
				return st
			}(),
		},
		"lost to another holder: records the reacquire value acted on": {
			sl:  makeSlock().reacquire("a2").reacquireRequest("a1").holds(heldSince).locked("True", "LockAcquired", 1, heldSince).build(),
			res: slockResult{action: slockHold, holder: alice},
			want: backendsv1alpha1.StateLockStatus{
				Holder: alice, ReacquireRequest: "a2",
				Conditions: []metav1.Condition{lockedCond("False", "LockLost",
					"Lost lock L of HttpBackend app: lock H held by alice@laptop since 2026-03-01T11:59:00Z now holds it (taken after a force unlock)."+reacquireNote)},
			},
		},
		"lost to nobody: released by someone else": {
			sl:  makeSlock().reacquireRequest("a1").holds(heldSince).locked("True", "LockAcquired", 1, heldSince).build(),
			res: slockResult{action: slockHold},
			want: backendsv1alpha1.StateLockStatus{
				Conditions: []metav1.Condition{lockedCond("False", "LockLost",
					"Lost lock L of HttpBackend app: it was released by someone else (a force unlock)."+reacquireNote)},
			},
		},
		"waiting behind a holder": {
			sl:  makeSlock().build(),
			res: slockResult{action: slockHold, holder: alice},
			want: backendsv1alpha1.StateLockStatus{
				Holder: alice,
				Conditions: []metav1.Condition{lockedCond("False", "WaitingForLock",
					"Waiting for the lock of HttpBackend app: lock H held by alice@laptop since 2026-03-01T11:59:00Z. The StateLock takes it as soon as it is free, never by force.")},
			},
		},
		"waiting behind a holder that cannot be read": {
			sl:  makeSlock().waitsFor(alice).build(),
			res: slockResult{action: slockHold},
			want: backendsv1alpha1.StateLockStatus{
				Conditions: []metav1.Condition{lockedCond("False", "WaitingForLock",
					"Waiting for the lock of HttpBackend app: the lock is held by a holder whose lock information cannot be read. The StateLock takes it as soon as it is free, never by force.")},
			},
		},
		"released at expiry": {
			sl:  makeSlock().until(slockNow.Add(-time.Minute)).holds(heldSince).locked("True", "LockAcquired", 1, heldSince).build(),
			res: slockResult{action: slockRelease, released: true},
			want: backendsv1alpha1.StateLockStatus{
				Conditions: []metav1.Condition{lockedCond("False", "Expired", "Expired at 2026-03-01T11:59:00Z: released lock L of HttpBackend app.")},
			},
		},
		"expiry finding the lock no longer its own": {
			sl:  makeSlock().until(slockNow.Add(-time.Minute)).holds(heldSince).locked("True", "LockAcquired", 1, heldSince).build(),
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
	sl := makeSlock().build()
	res := slockResult{action: slockHold, taken: &heldLock{id: "L", info: backendsv1alpha1.LockInfo{ID: "L", Created: metaTime(slockNow)}}}
	applySlockResult(sl, res, slockBackend, everyKindsFailures)
	res.taken.info.Created.Time = slockCreated
	res.taken.info.ID = "changed"
	if sl.Status.LockInfo.ID != "L" || !sl.Status.HeldSince.Equal(metaTime(slockNow)) || !sl.Status.LockInfo.Created.Equal(metaTime(slockNow)) {
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
				return heldObservation(makeSlock().holds(slockCreated).build(), slockBackend)
			},
			want: conditions.Observation{Status: "True", Reason: "LockAcquired", Message: "Holds lock L of HttpBackend app since 2026-03-01T10:00:00Z"},
		},
		"held until, in UTC whatever the zone": {
			obs: func() conditions.Observation {
				sl := makeSlock().until(slockNow.In(time.FixedZone("UTC+8", 8*3600))).holds(slockCreated).build()
				return heldObservation(sl, slockBackend)
			},
			want: conditions.Observation{Status: "True", Reason: "LockAcquired", Message: "Holds lock L of HttpBackend app since 2026-03-01T10:00:00Z, until 2026-03-01T12:00:00Z"},
		},
		"held, no heldSince": {
			obs: func() conditions.Observation {
				sl := makeSlock().build()
				sl.Status.LockID = "L"
				return heldObservation(sl, slockBackend)
			},
			want: conditions.Observation{Status: "True", Reason: "LockAcquired", Message: "Holds lock L of HttpBackend app"},
		},
		"expired, a lock released": {
			obs: func() conditions.Observation {
				return expiredObservation(makeSlock().until(slockNow).build(), "L", slockBackend)
			},
			want: conditions.Observation{Status: "False", Reason: "Expired", Message: "Expired at 2026-03-01T12:00:00Z: released lock L of HttpBackend app."},
		},
		"expired, nothing held": {
			obs: func() conditions.Observation {
				return expiredObservation(makeSlock().until(slockNow).build(), "", slockBackend)
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
		"all":        {holder: &backendsv1alpha1.LockInfo{ID: "H", Who: "alice", Created: metaTime(slockNow)}, want: "lock H held by alice since 2026-03-01T12:00:00Z"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := describeLockHolder(tc.holder); got != tc.want {
				t.Errorf("describeLockHolder() = %q, want %q", got, tc.want)
			}
		})
	}
}
