package controllers

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

func TestStateLockEvents(t *testing.T) {
	const T, F, U = metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	held := []metav1.Condition{cond("Locked", T, "LockAcquired", "Holds lock L"), cond("Ready", T, "Succeeded", "Holds lock L")}
	waiting := []metav1.Condition{cond("Locked", F, "WaitingForLock", "Waiting behind H"), cond("Ready", F, "WaitingForLock", "Waiting behind H")}
	cases := map[string]struct {
		before, after []metav1.Condition
		want          []event
	}{
		"nothing changes": {before: held, after: held},
		"the first reconcile, an operation under way": {
			after: []metav1.Condition{cond("Ready", U, "Progressing", "Waiting for the first probe")},
		},
		"taken on the first attempt": {
			before: []metav1.Condition{cond("Ready", U, "Progressing", "Waiting for the first probe")},
			after:  held,
			want:   []event{{"Normal", "LockAcquired", "Lock", "Holds lock L"}},
		},
		"taken after waiting": {
			before: waiting, after: held,
			want: []event{{"Normal", "LockAcquired", "Lock", "Holds lock L"}},
		},
		"starts waiting: one Normal event, not a Warning for Ready": {
			after: waiting,
			want:  []event{{"Normal", "WaitingForLock", "Lock", "Waiting behind H"}},
		},
		"still waiting, behind another holder: no event": {
			before: waiting,
			after:  []metav1.Condition{cond("Locked", F, "WaitingForLock", "Waiting behind I"), cond("Ready", F, "WaitingForLock", "Waiting behind I")},
		},
		"lost": {
			before: held,
			after: []metav1.Condition{
				cond("Locked", F, "LockLost", "Lost lock L"), cond("Ready", F, "LockLost", "Lost lock L"), cond("Stalled", T, "LockLost", "Lost lock L"),
			},
			want: []event{{"Warning", "LockLost", "Lock", "Lost lock L"}},
		},
		"released at expiry": {
			before: held,
			after:  []metav1.Condition{cond("Locked", F, "Expired", "Expired at U"), cond("Ready", F, "Expired", "Expired at U")},
			want:   []event{{"Normal", "Expired", "Unlock", "Expired at U"}},
		},
		"expired without a lock, again: no event": {
			before: []metav1.Condition{cond("Locked", F, "Expired", "Expired at U"), cond("Ready", F, "Expired", "Expired at U")},
			after:  []metav1.Condition{cond("Locked", F, "Expired", "Expired at U."), cond("Ready", F, "Expired", "Expired at U.")},
		},
		"a check fails: a Warning from Ready, none from Locked": {
			before: held,
			after:  []metav1.Condition{cond("Locked", U, "Unreachable", "Cannot check"), cond("Ready", U, "Unreachable", "Cannot check")},
			want:   []event{{"Warning", "Unreachable", "Reconcile", "Cannot check"}},
		},
		"a check fails again with another reason": {
			before: []metav1.Condition{cond("Locked", U, "Unreachable", "Cannot check"), cond("Ready", U, "Unreachable", "Cannot check")},
			after:  []metav1.Condition{cond("Locked", U, "ServerError", "Cannot check: 502"), cond("Ready", U, "ServerError", "Cannot check: 502")},
			want:   []event{{"Warning", "ServerError", "Reconcile", "Cannot check: 502"}},
		},
		"a check succeeds after failing: LockAcquired again": {
			before: []metav1.Condition{cond("Locked", U, "Unreachable", "Cannot check"), cond("Ready", U, "Unreachable", "Cannot check")},
			after:  held,
			want:   []event{{"Normal", "LockAcquired", "Lock", "Holds lock L"}},
		},
		"the backend goes missing while held": {
			before: held,
			after: []metav1.Condition{
				cond("Locked", T, "LockAcquired", "Holds lock L"), cond("Ready", F, "BackendNotFound", "no backend"), cond("Stalled", T, "BackendNotFound", "no backend"),
			},
			want: []event{{"Warning", "BackendNotFound", "Reconcile", "no backend"}},
		},
		"the backend's problem changes": {
			before: []metav1.Condition{cond("Ready", F, "BackendNotFound", "no backend")},
			after:  []metav1.Condition{cond("Ready", F, "BackendNotReady", "no Secret")},
			want:   []event{{"Warning", "BackendNotReady", "Reconcile", "no Secret"}},
		},
		"the backend's message alone changes: no event": {
			before: []metav1.Condition{cond("Ready", F, "BackendNotReady", "no Secret a")},
			after:  []metav1.Condition{cond("Ready", F, "BackendNotReady", "no Secret b")},
		},
		"a transient error while held: Ready stays True, no event": {
			before: held,
			after:  append(append([]metav1.Condition(nil), held...), cond("Reconciling", T, "ReconcileError", "Retrying")),
		},
		"a transient error while waiting": {
			before: waiting,
			after: []metav1.Condition{
				cond("Locked", F, "WaitingForLock", "Waiting behind H"), cond("Ready", F, "ReconcileError", "conflict"), cond("Reconciling", T, "ReconcileError", "Retrying"),
			},
			want: []event{{"Warning", "ReconcileError", "Reconcile", "conflict"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := stateLockEvents(statusView{conditions: tc.before}, statusView{conditions: tc.after})
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(event{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEachReconcilerReportsItsKindsEvents checks that a StateLock's
// events come from stateLockEvents, and a backend's from
// transitionEvents: a backend's rules would report a StateLock's Locked
// True as LockHeld.
func TestEachReconcilerReportsItsKindsEvents(t *testing.T) {
	locked := []metav1.Condition{cond("Locked", metav1.ConditionTrue, "LockAcquired", "Holds lock L")}
	sl := makeSlock().Obj()
	sl.Status.Conditions = locked
	got := newStateLockReconciler(nil, nil, nil).transitions(statusView{}, viewOf(sl))
	if diff := cmp.Diff([]event{{"Normal", "LockAcquired", "Lock", "Holds lock L"}}, got, cmp.AllowUnexported(event{})); diff != "" {
		t.Errorf("StateLock events (-want +got):\n%s", diff)
	}
	backend := builders.MakeHttpBackend("b", "ns", "http://127.0.0.1/").Obj()
	backend.Status.Conditions = []metav1.Condition{cond("Locked", metav1.ConditionTrue, "LockHeld", "Held by H")}
	got = newBackendReconciler(httpKind{}, nil, nil, nil).transitions(statusView{}, viewOf(backend))
	if diff := cmp.Diff([]event{{"Normal", "LockHeld", "Probe", "Held by H"}}, got, cmp.AllowUnexported(event{})); diff != "" {
		t.Errorf("backend events (-want +got):\n%s", diff)
	}
}

// TestSummarizeStateLock runs summarize as the StateLock reconciler does:
// Ready gated by Locked, and outcome.waiting while another holds the
// lock, which kstatus must read as in progress although the generation
// was observed.
func TestSummarizeStateLock(t *testing.T) {
	const T, F, U = metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	lockedWaiting := cond("Locked", F, "WaitingForLock", "Waiting behind H")
	waitingObs := &conditions.Observation{Status: T, Reason: "WaitingForLock", Message: "Waiting behind H"}
	gates := stateLockGates
	cases := map[string]struct {
		conds        []metav1.Condition
		observed     int64
		out          conditions.Outcome
		want         []metav1.Condition
		wantObserved int64
	}{
		"waiting behind a holder: Reconciling True with the waiting reason, Ready False": {
			conds: []metav1.Condition{lockedWaiting}, observed: 1,
			out: conditions.Outcome{ReadyMessage: "Waiting behind H", Gates: gates, Waiting: waitingObs},
			want: []metav1.Condition{
				lockedWaiting, cond("Ready", F, "WaitingForLock", "Waiting behind H"), cond("Reconciling", T, "WaitingForLock", "Waiting behind H"),
			},
			wantObserved: 2,
		},
		"waiting after a stall: the stall is gone": {
			conds: []metav1.Condition{
				lockedWaiting, cond("Ready", F, "BackendNotFound", "no backend"), cond("Stalled", T, "BackendNotFound", "no backend"),
			},
			observed: 2,
			out:      conditions.Outcome{Gates: gates, Waiting: waitingObs},
			want: []metav1.Condition{
				lockedWaiting, cond("Ready", F, "WaitingForLock", "Waiting behind H"), cond("Reconciling", T, "WaitingForLock", "Waiting behind H"),
			},
			wantObserved: 2,
		},
		"waiting after the first operation: Progressing gives way": {
			conds: []metav1.Condition{
				lockedWaiting, cond("Ready", U, "Progressing", "Waiting for the first probe"), cond("Reconciling", T, "Progressing", "Waiting for the first probe"),
			},
			observed: -1,
			out:      conditions.Outcome{Gates: gates, Waiting: waitingObs},
			want: []metav1.Condition{
				lockedWaiting, cond("Ready", F, "WaitingForLock", "Waiting behind H"), cond("Reconciling", T, "WaitingForLock", "Waiting behind H"),
			},
			wantObserved: 2,
		},
		"taken after waiting: Reconciling goes": {
			conds: []metav1.Condition{
				cond("Locked", T, "LockAcquired", "Holds lock L"), cond("Ready", F, "WaitingForLock", "Waiting behind H"), cond("Reconciling", T, "WaitingForLock", "Waiting behind H"),
			},
			observed: 2,
			out:      conditions.Outcome{ReadyMessage: "Holds lock L", Gates: gates},
			want: []metav1.Condition{
				cond("Locked", T, "LockAcquired", "Holds lock L"), cond("Ready", T, "Succeeded", "Holds lock L"),
			},
			wantObserved: 2,
		},
		"a stall while waiting: Stalled, never Reconciling": {
			conds:    []metav1.Condition{lockedWaiting, cond("Reconciling", T, "WaitingForLock", "Waiting behind H")},
			observed: 1,
			out: conditions.Outcome{Gates: gates, Waiting: waitingObs,
				Stall: &conditions.StallError{Reason: "LockingDisabled", Message: "HttpBackend app cannot be locked"}},
			want: []metav1.Condition{
				lockedWaiting, cond("Ready", F, "LockingDisabled", "HttpBackend app cannot be locked"), cond("Stalled", T, "LockingDisabled", "HttpBackend app cannot be locked"),
			},
			wantObserved: 2,
		},
		"lost: a stall": {
			conds:    []metav1.Condition{cond("Locked", F, "LockLost", "Lost lock L"), cond("Ready", T, "Succeeded", "Holds lock L")},
			observed: 2,
			out:      conditions.Outcome{Gates: gates, Stall: &conditions.StallError{Reason: "LockLost", Message: "Lost lock L"}},
			want: []metav1.Condition{
				cond("Locked", F, "LockLost", "Lost lock L"), cond("Ready", F, "LockLost", "Lost lock L"), cond("Stalled", T, "LockLost", "Lost lock L"),
			},
			wantObserved: 2,
		},
		"an error while waiting: Reconciling says the error": {
			conds:    []metav1.Condition{lockedWaiting, cond("Ready", F, "WaitingForLock", "Waiting behind H"), cond("Stalled", T, "LockLost", "old")},
			observed: 1,
			out:      conditions.Outcome{Gates: gates, Waiting: waitingObs, Err: errors.New("conflict")},
			want: []metav1.Condition{
				lockedWaiting, cond("Ready", F, "ReconcileError", "conflict"), cond("Reconciling", T, "ReconcileError", "Retrying after an error: conflict"),
			},
			wantObserved: 1,
		},
		"the first operation under way: Progressing": {
			observed: -1,
			out:      conditions.Outcome{Gates: gates, ProbePending: true},
			want: []metav1.Condition{
				cond("Ready", U, "Progressing", "Waiting for the first probe"), cond("Reconciling", T, "Progressing", "Waiting for the first probe of this generation"),
			},
			wantObserved: -1,
		},
		"expired: Ready True, done as its spec says (kstatus Current)": {
			conds:    []metav1.Condition{cond("Locked", F, "Expired", "Expired at U.")},
			observed: 2,
			out:      stateLockOutcome(&metav1.Condition{Type: "Locked", Status: F, Reason: "Expired", Message: "Expired at U."}),
			want: []metav1.Condition{
				cond("Locked", F, "Expired", "Expired at U."), cond("Ready", T, "Expired", "Expired at U."),
			},
			wantObserved: 2,
		},
	}
	const generation = 2
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			conds := append([]metav1.Condition(nil), tc.conds...)
			got := conditions.Summarize(&conds, generation, tc.observed, tc.out)
			if got != tc.wantObserved {
				t.Errorf("observedGeneration = %d, want %d", got, tc.wantObserved)
			}
			if diff := cmp.Diff(tc.want, conds, ignoreTimes, cmpopts.SortSlices(func(a, b metav1.Condition) bool { return a.Type < b.Type })); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			for _, v := range kstatusViolations(conds, generation, got) {
				t.Error(v)
			}
		})
	}
}
