package controllers

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// slocks returns the StateLocks ws build.
func slocks(ws ...*builders.StateLockWrapper) []backendsv1alpha1.StateLock {
	var out []backendsv1alpha1.StateLock
	for _, w := range ws {
		out = append(out, *w.Obj())
	}
	return out
}

func TestHolderOfProbedState(t *testing.T) {
	cases := map[string]struct {
		locks []backendsv1alpha1.StateLock
		want  string // name of the holder, "" for none
	}{
		"none":                                {},
		"one waiting holds nothing":           {locks: slocks(makeSlock())},
		"one holding the default workspace":   {locks: slocks(makeSlock().Holds(slockInfo(slockNow))), want: "freeze"},
		"the empty workspace is default":      {locks: slocks(makeNamedSlock("f", "").Holds(slockInfo(slockNow))), want: "f"},
		"another workspace is another state":  {locks: slocks(makeNamedSlock("f", "staging").Holds(slockInfo(slockNow)))},
		"the holder among waiting StateLocks": {locks: slocks(makeNamedSlock("a", "default"), makeNamedSlock("b", "default").Holds(slockInfo(slockNow))), want: "b"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if h := holderOfProbedState(tc.locks); h != nil {
				got = h.Name
			}
			if got != tc.want {
				t.Errorf("holderOfProbedState = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStateLocksView(t *testing.T) {
	waiting := slocks(makeSlock())
	holding := slocks(makeSlock().Holds(slockInfo(slockNow)))
	other := slocks(makeNamedSlock("other", "staging").Holds(slockInfo(slockNow)))
	if !bytes.Equal(stateLocksView(nil), stateLocksView(waiting)) {
		t.Error("a StateLock that holds nothing changes the view: a waiting StateLock would make probes due")
	}
	if bytes.Equal(stateLocksView(waiting), stateLocksView(holding)) {
		t.Error("taking the lock leaves the view as it was: the backend would not be probed at once")
	}
	if bytes.Equal(stateLocksView(holding), stateLocksView(append(holding, other...))) {
		t.Error("a lock of another workspace leaves the view as it was")
	}
}

func TestUncheckedLockVerdict(t *testing.T) {
	const hint = "set probe.lockCheck."
	held := makeSlock().Holds(slockInfo(slockNow)).Obj()
	recordedAlone := makeSlock().Obj()
	recordedAlone.Status.LockID = "L"
	cases := map[string]struct {
		holder *backendsv1alpha1.StateLock
		want   lockVerdict
	}{
		"no StateLock holds it: unchecked": {
			want: lockVerdict{known: true, obs: conditions.Observation{Status: metav1.ConditionUnknown, Reason: backendsv1alpha1.LockNotCheckedReason,
				Message: "The lock is not checked, and no StateLock holds it: set probe.lockCheck."}},
		},
		"a StateLock holds it: held, by its LockInfo": {
			holder: held,
			want: lockVerdict{known: true, holder: held.Status.LockInfo, obs: conditions.Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.LockHeldReason,
				Message: "Lock L is held by StateLock freeze since 2026-03-01T12:00:00Z. The lock is not checked otherwise: set probe.lockCheck."}},
		},
		"a StateLock that recorded only the ID": {
			holder: recordedAlone,
			want: lockVerdict{known: true, holder: &backendsv1alpha1.LockInfo{ID: "L", Who: slockWho}, obs: conditions.Observation{Status: metav1.ConditionTrue,
				Reason: backendsv1alpha1.LockHeldReason, Message: "Lock L is held by StateLock freeze. The lock is not checked otherwise: set probe.lockCheck."}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := uncheckedLockVerdict(tc.holder, hint)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(lockVerdict{}, conditions.Observation{})); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLockedWord(t *testing.T) {
	locked := func(status metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Succeeded"}, {Type: "Locked", Status: status, Reason: reason}}
	}
	cases := map[string]struct {
		conds []metav1.Condition
		want  string
	}{
		"no Locked condition":   {conds: []metav1.Condition{{Type: "Ready", Status: "True"}}},
		"held":                  {conds: locked(metav1.ConditionTrue, backendsv1alpha1.LockHeldReason), want: "True"},
		"free":                  {conds: locked(metav1.ConditionFalse, backendsv1alpha1.NotLockedReason), want: "False"},
		"a read failed":         {conds: locked(metav1.ConditionUnknown, backendsv1alpha1.UnreachableReason), want: "Unknown"},
		"not checked":           {conds: locked(metav1.ConditionUnknown, backendsv1alpha1.LockNotCheckedReason), want: "Unchecked"},
		"a StateLock's, known":  {conds: locked(metav1.ConditionTrue, backendsv1alpha1.LockHeldReason), want: "True"},
		"released by the probe": {conds: locked(metav1.ConditionFalse, backendsv1alpha1.ForceUnlockedReason), want: "False"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := lockedWord(tc.conds); got != tc.want {
				t.Errorf("lockedWord = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDeletionBlockers(t *testing.T) {
	cases := map[string]struct {
		locks []backendsv1alpha1.StateLock
		want  []string
	}{
		"none":                                {},
		"waiting for the lock: not a blocker": {locks: slocks(makeSlock())},
		"holding the lock":                    {locks: slocks(makeSlock().Holds(slockInfo(slockNow))), want: []string{"freeze"}},
		"holding another workspace's lock":    {locks: slocks(makeNamedSlock("ws", "staging").Holds(slockInfo(slockNow))), want: []string{"ws"}},
		"deleted, still releasing":            {locks: slocks(makeSlock().Deleted(slockNow).Finalizers(backendsv1alpha1.StateLockFinalizer)), want: []string{"freeze"}},
		"deleted, released (finalizer gone)": {locks: func() []backendsv1alpha1.StateLock {
			l := slocks(makeSlock().Deleted(slockNow).Finalizers(backendsv1alpha1.StateLockFinalizer))
			l[0].Finalizers = nil
			return l
		}()},
		"some hold, some wait, in the given order": {locks: slocks(makeNamedSlock("a", "default"), makeNamedSlock("b", "default").Holds(slockInfo(slockNow)), makeNamedSlock("c", "x").Deleted(slockNow).Finalizers(backendsv1alpha1.StateLockFinalizer)), want: []string{"b", "c"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, sl := range deletionBlockers(tc.locks) {
				got = append(got, sl.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("blockers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInUseObservation(t *testing.T) {
	many := slocks(makeNamedSlock("s1", "default").Holds(slockInfo(slockNow)), makeNamedSlock("s2", "a").Holds(slockInfo(slockNow)),
		makeNamedSlock("s3", "b").Holds(slockInfo(slockNow)), makeNamedSlock("s4", "c").Holds(slockInfo(slockNow)),
		makeNamedSlock("s5", "d").Holds(slockInfo(slockNow)), makeNamedSlock("s6", "e").Holds(slockInfo(slockNow)))
	cases := map[string]struct {
		blockers []backendsv1alpha1.StateLock
		want     string
	}{
		"one holding": {
			blockers: slocks(makeSlock().Holds(slockInfo(slockNow))),
			want: "Deletion waits until no StateLock holds this backend's lock: StateLock freeze (holds lock L). " +
				"Delete them (kubectl delete statelock -n team-a freeze) to release their locks, or wait for their spec.until; the backend is deleted right after.",
		},
		"one releasing": {
			blockers: slocks(makeSlock().Deleted(slockNow).Finalizers(backendsv1alpha1.StateLockFinalizer)),
			want: "Deletion waits until no StateLock holds this backend's lock: StateLock freeze (deleted, releasing its lock). " +
				"Delete them (kubectl delete statelock -n team-a freeze) to release their locks, or wait for their spec.until; the backend is deleted right after.",
		},
		"more than the message names": {
			blockers: many,
			want: "Deletion waits until no StateLock holds this backend's lock: StateLock s1 (holds lock L), StateLock s2 (holds lock L), " +
				"StateLock s3 (holds lock L), StateLock s4 (holds lock L), StateLock s5 (holds lock L), and 1 more. " +
				"Delete them (kubectl delete statelock -n team-a s1 s2 s3 s4 s5) to release their locks, or wait for their spec.until; the backend is deleted right after.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := inUseObservation(tc.blockers)
			want := conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.InUseReason, Message: tc.want}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(conditions.Observation{})); diff != "" {
				t.Errorf("observation (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTakeAllowed(t *testing.T) {
	cases := map[string]struct {
		finalizers []string
		deleted    bool
		want       bool
		wantStall  string
	}{
		"not protected yet: wait": {},
		"protected: take":         {finalizers: []string{backendsv1alpha1.BackendProtectionFinalizer}, want: true},
		"being deleted: a stall":  {finalizers: []string{backendsv1alpha1.BackendProtectionFinalizer}, deleted: true, wantStall: backendsv1alpha1.BackendNotReadyReason},
		"another finalizer only":  {finalizers: []string{"example.com/other"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := builders.MakeHttpBackend("app", "team-a", "").Finalizers(tc.finalizers...)
			if tc.deleted {
				b.Deleted(slockNow)
			}
			got, err := takeAllowed(b.Obj(), slockBackend)
			if got != tc.want {
				t.Errorf("takeAllowed = %v, want %v", got, tc.want)
			}
			reason := ""
			if se, ok := conditions.AsStall(err); ok {
				reason = se.Reason
			} else if err != nil {
				t.Fatalf("takeAllowed: %v, want a stall or nothing", err)
			}
			if reason != tc.wantStall {
				t.Errorf("stall reason %q, want %q", reason, tc.wantStall)
			}
		})
	}
}
