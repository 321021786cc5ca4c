package controllers

import (
	"testing"

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
