package controllers

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// cond is a short way to write a condition in the tables below.
func cond(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
}

var ignoreTimes = cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime", "ObservedGeneration")

func TestSummarize(t *testing.T) {
	const T, F, U = metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	cases := map[string]struct {
		conds        []metav1.Condition
		generation   int64
		observed     int64
		out          outcome
		want         []metav1.Condition
		wantObserved int64
	}{
		"success without probe": {
			conds:      []metav1.Condition{cond("Reconciling", T, "Progressing", "x")},
			generation: 2, observed: 1,
			out:          outcome{readyMessage: "Rendered"},
			want:         []metav1.Condition{cond("Ready", T, "Succeeded", "Rendered")},
			wantObserved: 2,
		},
		"success with a reachable backend": {
			conds:      []metav1.Condition{cond("StateReachable", T, "Reachable", "ok")},
			generation: 1, observed: -1,
			out:          outcome{readyMessage: "Rendered", gates: []string{"StateReachable"}},
			want:         []metav1.Condition{cond("StateReachable", T, "Reachable", "ok"), cond("Ready", T, "Succeeded", "Rendered")},
			wantObserved: 1,
		},
		"a failed probe makes Ready False with its reason": {
			conds:      []metav1.Condition{cond("StateReachable", F, "Unauthorized", "requires auth")},
			generation: 1, observed: -1,
			out:          outcome{readyMessage: "Rendered", gates: []string{"StateReachable"}},
			want:         []metav1.Condition{cond("StateReachable", F, "Unauthorized", "requires auth"), cond("Ready", F, "Unauthorized", "requires auth")},
			wantObserved: 1,
		},
		"an unknown probe makes Ready Unknown": {
			conds:      []metav1.Condition{cond("BucketReady", U, "Unreachable", "no answer")},
			generation: 1, observed: 1,
			out:          outcome{gates: []string{"BucketReady"}},
			want:         []metav1.Condition{cond("BucketReady", U, "Unreachable", "no answer"), cond("Ready", U, "Unreachable", "no answer")},
			wantObserved: 1,
		},
		"a stall": {
			conds:      []metav1.Condition{cond("Reconciling", T, "Progressing", "x"), cond("Ready", T, "Succeeded", "old")},
			generation: 3, observed: 2,
			out:          outcome{stall: &stallError{reason: "SecretNotFound", message: "Secret ns/pw does not exist"}},
			want:         []metav1.Condition{cond("Ready", F, "SecretNotFound", "Secret ns/pw does not exist"), cond("Stalled", T, "SecretNotFound", "Secret ns/pw does not exist")},
			wantObserved: 3,
		},
		"a transient error keeps Ready True and the observed generation": {
			conds:      []metav1.Condition{cond("Ready", T, "Succeeded", "old"), cond("Stalled", T, "SecretNotFound", "x")},
			generation: 3, observed: 2,
			out:          outcome{err: errors.New("connection refused")},
			want:         []metav1.Condition{cond("Ready", T, "Succeeded", "old"), cond("Reconciling", T, "ReconcileError", "Retrying after an error: connection refused")},
			wantObserved: 2,
		},
		"the first probe of a generation under way": {
			conds:      []metav1.Condition{cond("Reconciling", T, "Progressing", "x"), cond("Ready", T, "Succeeded", "old")},
			generation: 2, observed: 1,
			out: outcome{readyMessage: "Rendered", gates: []string{"StateReachable"}, probePending: true},
			want: []metav1.Condition{
				cond("Reconciling", T, "Progressing", "Waiting for the first probe of this generation"),
				cond("Ready", U, "Progressing", "Rendered; waiting for the first probe"),
			},
			wantObserved: 1,
		},
		"a periodic probe under way changes nothing": {
			conds:      []metav1.Condition{{Type: "StateReachable", Status: T, Reason: "Reachable", Message: "ok", ObservedGeneration: 2}},
			generation: 2, observed: 2,
			out:          outcome{readyMessage: "Rendered", gates: []string{"StateReachable"}, probePending: true},
			want:         []metav1.Condition{cond("StateReachable", T, "Reachable", "ok"), cond("Ready", T, "Succeeded", "Rendered")},
			wantObserved: 2,
		},
		"a gate turned off does not gate Ready": {
			conds:      []metav1.Condition{{Type: "StateReachable", Status: U, Reason: "ProbeDisabled", Message: "Probing is disabled", ObservedGeneration: 1}},
			generation: 1, observed: -1,
			out:          outcome{readyMessage: "Rendered", gates: []string{"StateReachable"}, probePending: true},
			want:         []metav1.Condition{cond("StateReachable", U, "ProbeDisabled", "Probing is disabled"), cond("Ready", T, "Succeeded", "Rendered")},
			wantObserved: 1,
		},
		"a gate the operator cannot check does not gate Ready": {
			conds:      []metav1.Condition{cond("BucketReady", U, "AssumeRoleNotSupported", "not checked")},
			generation: 1, observed: -1,
			out:          outcome{readyMessage: "Rendered", gates: []string{"BucketReady"}},
			want:         []metav1.Condition{cond("BucketReady", U, "AssumeRoleNotSupported", "not checked"), cond("Ready", T, "Succeeded", "Rendered")},
			wantObserved: 1,
		},
		"a False gate wins over an earlier Unknown one": {
			conds:      []metav1.Condition{cond("A", U, "Unreachable", "no answer"), cond("B", F, "Forbidden", "refused")},
			generation: 1, observed: -1,
			out:          outcome{readyMessage: "Rendered", gates: []string{"A", "B"}},
			want:         []metav1.Condition{cond("A", U, "Unreachable", "no answer"), cond("B", F, "Forbidden", "refused"), cond("Ready", F, "Forbidden", "refused")},
			wantObserved: 1,
		},
		"the first False gate in declared order is reported": {
			conds:      []metav1.Condition{cond("A", F, "First", "a"), cond("B", F, "Second", "b")},
			generation: 1, observed: -1,
			out:          outcome{readyMessage: "Rendered", gates: []string{"B", "A"}},
			want:         []metav1.Condition{cond("A", F, "First", "a"), cond("B", F, "Second", "b"), cond("Ready", F, "Second", "b")},
			wantObserved: 1,
		},
		"a second gate not yet observed is awaited": {
			conds:      []metav1.Condition{cond("A", T, "Reachable", "ok")},
			generation: 1, observed: -1,
			out: outcome{readyMessage: "Rendered", gates: []string{"A", "B"}, probePending: true},
			want: []metav1.Condition{
				cond("A", T, "Reachable", "ok"),
				cond("Reconciling", T, "Progressing", "Waiting for the first probe of this generation"),
				cond("Ready", U, "Progressing", "Rendered; waiting for the first probe"),
			},
			wantObserved: -1,
		},
		"a transient error on a new object": {
			generation: 1, observed: -1,
			out:          outcome{err: errors.New("timeout")},
			want:         []metav1.Condition{cond("Reconciling", T, "ReconcileError", "Retrying after an error: timeout"), cond("Ready", F, "ReconcileError", "timeout")},
			wantObserved: -1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			conds := append([]metav1.Condition(nil), tc.conds...)
			got := summarize(&conds, tc.generation, tc.observed, tc.out)
			if got != tc.wantObserved {
				t.Errorf("observedGeneration = %d, want %d", got, tc.wantObserved)
			}
			if diff := cmp.Diff(tc.want, conds, ignoreTimes, cmpopts.SortSlices(func(a, b metav1.Condition) bool { return a.Type < b.Type })); diff != "" {
				t.Errorf("conditions mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMarkReconciling(t *testing.T) {
	cases := map[string]struct {
		generation, observed int64
		want                 []metav1.Condition
	}{
		"new generation":      {generation: 2, observed: 1, want: []metav1.Condition{cond("Reconciling", metav1.ConditionTrue, "Progressing", "Reconciling a new generation")}},
		"generation observed": {generation: 2, observed: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var conds []metav1.Condition
			markReconciling(&conds, tc.generation, tc.observed)
			if diff := cmp.Diff(tc.want, conds, ignoreTimes); diff != "" {
				t.Errorf("conditions mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTransitionEvents(t *testing.T) {
	const T, F, U = metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	bob, alice := &backendsv1alpha1.LockInfo{ID: "bob-1"}, &backendsv1alpha1.LockInfo{ID: "alice-1"}
	cases := map[string]struct {
		before, after             []metav1.Condition
		holderBefore, holderAfter *backendsv1alpha1.LockInfo
		want                      []event
	}{
		"nothing changes": {
			before: []metav1.Condition{cond("Ready", T, "Succeeded", "a"), cond("Locked", F, "NotLocked", "")},
			after:  []metav1.Condition{cond("Ready", T, "Succeeded", "a"), cond("Locked", F, "NotLocked", "")},
		},
		"becomes ready the first time: no event": {
			after: []metav1.Condition{cond("Ready", T, "Succeeded", "Rendered")},
		},
		"becomes ready after a change: no event": {
			before: []metav1.Condition{cond("Ready", U, "Progressing", "Reconciling")},
			after:  []metav1.Condition{cond("Ready", T, "Succeeded", "Rendered")},
		},
		"becomes ready after a failure": {
			before: []metav1.Condition{cond("Ready", F, "Unauthorized", "401")},
			after:  []metav1.Condition{cond("Ready", T, "Succeeded", "Rendered")},
			want:   []event{{"Normal", "Succeeded", "Reconcile", "Rendered"}},
		},
		"stops being ready": {
			before: []metav1.Condition{cond("Ready", T, "Succeeded", "a")},
			after:  []metav1.Condition{cond("Ready", F, "SecretNotFound", "gone")},
			want:   []event{{"Warning", "SecretNotFound", "Reconcile", "gone"}},
		},
		"a message change alone is no event": {
			before: []metav1.Condition{cond("Ready", F, "Unauthorized", "a")},
			after:  []metav1.Condition{cond("Ready", F, "Unauthorized", "b")},
		},
		"stalled again, for another reason: a warning for each": {
			before: []metav1.Condition{cond("Ready", F, "SecretNotFound", "no password Secret"), cond("Stalled", T, "SecretNotFound", "no password Secret")},
			after:  []metav1.Condition{cond("Ready", F, "InvalidCertificate", "bad PEM"), cond("Stalled", T, "InvalidCertificate", "bad PEM")},
			want:   []event{{"Warning", "InvalidCertificate", "Reconcile", "bad PEM"}},
		},
		"still not ready, from a stall to a probe failure": {
			before: []metav1.Condition{cond("Ready", F, "SecretNotFound", "gone")},
			after:  []metav1.Condition{cond("Ready", F, "Unauthorized", "401")},
			want:   []event{{"Warning", "Unauthorized", "Reconcile", "401"}},
		},
		"still unknown, now in progress: no event": {
			before: []metav1.Condition{cond("Ready", U, "Unreachable", "down")},
			after:  []metav1.Condition{cond("Ready", U, "Progressing", "Waiting for the first probe")},
		},
		"deletion waits for a StateLock: a warning": {
			before: []metav1.Condition{cond("Ready", T, "Succeeded", "a")},
			after:  []metav1.Condition{cond("Ready", F, "InUse", "Deletion waits")},
			want:   []event{{"Warning", "InUse", "Reconcile", "Deletion waits"}},
		},
		"a lock appears and goes": {
			before: []metav1.Condition{cond("Locked", F, "NotLocked", "")},
			after:  []metav1.Condition{cond("Locked", T, "LockHeld", "by bob")},
			want:   []event{{"Normal", "LockHeld", "Probe", "by bob"}},
		},
		"a lock is released": {
			before: []metav1.Condition{cond("Locked", T, "LockHeld", "by bob")},
			after:  []metav1.Condition{cond("Locked", F, "NotLocked", "free")},
			want:   []event{{"Normal", "LockReleased", "Probe", "free"}},
		},
		"the operator releases a lock": {
			before: []metav1.Condition{cond("Locked", T, "LockHeld", "by bob")},
			after:  []metav1.Condition{cond("Locked", F, "ForceUnlocked", "released")},
			want:   []event{{"Normal", "ForceUnlocked", "ForceUnlock", "released"}},
		},
		"the operator releases a lock on the backend's first probe": {
			after: []metav1.Condition{cond("Locked", F, "ForceUnlocked", "released")},
			want:  []event{{"Normal", "ForceUnlocked", "ForceUnlock", "released"}},
		},
		"the operator releases a lock the last check could not see": {
			before: []metav1.Condition{cond("Locked", metav1.ConditionUnknown, "Unreachable", "")},
			after:  []metav1.Condition{cond("Locked", F, "ForceUnlocked", "released")},
			want:   []event{{"Normal", "ForceUnlocked", "ForceUnlock", "released"}},
		},
		"the operator releases a lock taken since the last probe": {
			before: []metav1.Condition{cond("Locked", F, "NotLocked", "")},
			after:  []metav1.Condition{cond("Locked", F, "ForceUnlocked", "released")},
			want:   []event{{"Normal", "ForceUnlocked", "ForceUnlock", "released"}},
		},
		"a release written again is no event": {
			before: []metav1.Condition{cond("Locked", F, "ForceUnlocked", "released")},
			after:  []metav1.Condition{cond("Locked", F, "ForceUnlocked", "released")},
		},
		"work in progress is no warning": {
			before: []metav1.Condition{cond("Ready", T, "Succeeded", "a")},
			after:  []metav1.Condition{cond("Ready", metav1.ConditionUnknown, "Progressing", "waiting for the first probe")},
		},
		"the first observation of no lock is no event": {
			after: []metav1.Condition{cond("Locked", F, "NotLocked", "")},
		},
		"a failed check is no event": {
			before: []metav1.Condition{cond("Locked", T, "LockHeld", "by bob")}, holderBefore: bob,
			after: []metav1.Condition{cond("Locked", U, "ServerError", "500")}, holderAfter: bob,
		},
		"a lock seen free after a failed check is released": {
			before: []metav1.Condition{cond("Locked", U, "ServerError", "500")}, holderBefore: bob,
			after: []metav1.Condition{cond("Locked", F, "NotLocked", "free")},
			want:  []event{{"Normal", "LockReleased", "Probe", "free"}},
		},
		"the same holder seen after a failed check is no new lock": {
			before: []metav1.Condition{cond("Locked", U, "ServerError", "500")}, holderBefore: bob,
			after: []metav1.Condition{cond("Locked", T, "LockHeld", "by bob")}, holderAfter: bob,
		},
		"another holder seen after a failed check is a new lock": {
			before: []metav1.Condition{cond("Locked", U, "ServerError", "500")}, holderBefore: bob,
			after: []metav1.Condition{cond("Locked", T, "LockHeld", "by alice")}, holderAfter: alice,
			want: []event{{"Normal", "LockHeld", "Probe", "by alice"}},
		},
		"a lock that changed holder between two checks is a new lock": {
			before: []metav1.Condition{cond("Locked", T, "LockHeld", "by bob")}, holderBefore: bob,
			after: []metav1.Condition{cond("Locked", T, "LockHeld", "by alice")}, holderAfter: alice,
			want: []event{{"Normal", "LockHeld", "Probe", "by alice"}},
		},
		"a held lock turns stale: one warning": {
			before: []metav1.Condition{cond("Locked", T, "LockHeld", "by bob")}, holderBefore: bob,
			after: []metav1.Condition{cond("Locked", T, "StaleLock", "by bob, stale")}, holderAfter: bob,
			want: []event{{"Warning", "StaleLock", "Probe", "by bob, stale"}},
		},
		"a stale lock stays stale: no warning again": {
			before: []metav1.Condition{cond("Locked", T, "StaleLock", "by bob, over 1h")}, holderBefore: bob,
			after: []metav1.Condition{cond("Locked", T, "StaleLock", "by bob, over 6h")}, holderAfter: bob,
		},
		"a lock stale at first sight: the warning alone": {
			after: []metav1.Condition{cond("Locked", T, "StaleLock", "by bob, stale")}, holderAfter: bob,
			want: []event{{"Warning", "StaleLock", "Probe", "by bob, stale"}},
		},
		"a new holder of a stale lock, stale too: warned again": {
			before: []metav1.Condition{cond("Locked", T, "StaleLock", "by bob, stale")}, holderBefore: bob,
			after: []metav1.Condition{cond("Locked", T, "StaleLock", "by alice, stale")}, holderAfter: alice,
			want: []event{{"Warning", "StaleLock", "Probe", "by alice, stale"}},
		},
		"a new holder of a stale lock, not stale": {
			before: []metav1.Condition{cond("Locked", T, "StaleLock", "by bob, stale")}, holderBefore: bob,
			after: []metav1.Condition{cond("Locked", T, "LockHeld", "by alice")}, holderAfter: alice,
			want: []event{{"Normal", "LockHeld", "Probe", "by alice"}},
		},
		"a stale lock no longer stale (staleAfter raised) is no event": {
			before: []metav1.Condition{cond("Locked", T, "StaleLock", "by bob, stale")}, holderBefore: bob,
			after: []metav1.Condition{cond("Locked", T, "LockHeld", "by bob")}, holderAfter: bob,
		},
		"a stale lock seen again after a failed check warns again": {
			before: []metav1.Condition{cond("Locked", U, "ServerError", "500")}, holderBefore: bob,
			after: []metav1.Condition{cond("Locked", T, "StaleLock", "by bob, stale")}, holderAfter: bob,
			want: []event{{"Warning", "StaleLock", "Probe", "by bob, stale"}},
		},
		"a stale lock released": {
			before: []metav1.Condition{cond("Locked", T, "StaleLock", "by bob, stale")}, holderBefore: bob,
			after: []metav1.Condition{cond("Locked", F, "NotLocked", "free")},
			want:  []event{{"Normal", "LockReleased", "Probe", "free"}},
		},
		"the operator releases a gone holder's lock": {
			before: []metav1.Condition{cond("Locked", T, "LockHeld", "by bob in runner-7")}, holderBefore: bob,
			after: []metav1.Condition{cond("Locked", F, "HolderGoneReleased", "released, Pod runner-7 gone")},
			want:  []event{{"Normal", "HolderGoneReleased", "ForceUnlock", "released, Pod runner-7 gone"}},
		},
		"a gone holder's release written again is no event": {
			before: []metav1.Condition{cond("Locked", F, "HolderGoneReleased", "released")},
			after:  []metav1.Condition{cond("Locked", F, "HolderGoneReleased", "released")},
		},
		"a gone holder's release after a force unlock is audited": {
			before: []metav1.Condition{cond("Locked", F, "ForceUnlocked", "released")},
			after:  []metav1.Condition{cond("Locked", F, "HolderGoneReleased", "released, Pod runner-7 gone")},
			want:   []event{{"Normal", "HolderGoneReleased", "ForceUnlock", "released, Pod runner-7 gone"}},
		},
		"a lock never seen before a failed check is no release when free": {
			before: []metav1.Condition{cond("Locked", U, "ServerError", "500")},
			after:  []metav1.Condition{cond("Locked", F, "NotLocked", "free")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := transitionEvents(statusView{conditions: tc.before, holder: tc.holderBefore}, statusView{conditions: tc.after, holder: tc.holderAfter})
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(event{})); diff != "" {
				t.Errorf("events mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	long := strings.Repeat("é", maxMessageLength) // 2 bytes each
	cases := map[string]struct {
		in      string
		wantLen int
	}{
		"short stays":      {in: "hello", wantLen: 5},
		"at the limit":     {in: strings.Repeat("a", maxMessageLength), wantLen: maxMessageLength},
		"ASCII is cut":     {in: strings.Repeat("a", maxMessageLength+1), wantLen: maxMessageLength},
		"no rune is split": {in: long, wantLen: maxMessageLength - 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := truncate(tc.in)
			if len(got) != tc.wantLen || !utf8.ValidString(got) {
				t.Errorf("truncate() gives %d bytes (valid UTF-8: %v), want %d", len(got), utf8.ValidString(got), tc.wantLen)
			}
		})
	}
}
