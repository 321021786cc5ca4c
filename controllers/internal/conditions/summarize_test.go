package conditions

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		out          Outcome
		want         []metav1.Condition
		wantObserved int64
	}{
		"success without probe": {
			conds:      []metav1.Condition{cond("Reconciling", T, "Progressing", "x")},
			generation: 2, observed: 1,
			out:          Outcome{ReadyMessage: "Rendered"},
			want:         []metav1.Condition{cond("Ready", T, "Succeeded", "Rendered")},
			wantObserved: 2,
		},
		"success with a reachable backend": {
			conds:      []metav1.Condition{cond("StateReachable", T, "Reachable", "ok")},
			generation: 1, observed: -1,
			out:          Outcome{ReadyMessage: "Rendered", Gates: []string{"StateReachable"}},
			want:         []metav1.Condition{cond("StateReachable", T, "Reachable", "ok"), cond("Ready", T, "Succeeded", "Rendered")},
			wantObserved: 1,
		},
		"a failed probe makes Ready False with its reason": {
			conds:      []metav1.Condition{cond("StateReachable", F, "Unauthorized", "requires auth")},
			generation: 1, observed: -1,
			out:          Outcome{ReadyMessage: "Rendered", Gates: []string{"StateReachable"}},
			want:         []metav1.Condition{cond("StateReachable", F, "Unauthorized", "requires auth"), cond("Ready", F, "Unauthorized", "requires auth")},
			wantObserved: 1,
		},
		"NotReady makes Ready False once the work is done, and the generation is observed": {
			conds:      []metav1.Condition{cond("Reconciling", T, "Progressing", "x")},
			generation: 2, observed: 1,
			out:          Outcome{ReadyMessage: "Granted", NotReady: &Observation{Status: F, Reason: "NamespaceNotWatched", Message: "not watched"}},
			want:         []metav1.Condition{cond("Ready", F, "NamespaceNotWatched", "not watched")},
			wantObserved: 2,
		},
		"a gate that is not True wins over NotReady": {
			conds:      []metav1.Condition{cond("StateReachable", F, "Unauthorized", "requires auth")},
			generation: 1, observed: -1,
			out: Outcome{ReadyMessage: "Rendered", Gates: []string{"StateReachable"},
				NotReady: &Observation{Status: F, Reason: "NamespaceNotWatched", Message: "not watched"}},
			want:         []metav1.Condition{cond("StateReachable", F, "Unauthorized", "requires auth"), cond("Ready", F, "Unauthorized", "requires auth")},
			wantObserved: 1,
		},
		"an unknown probe makes Ready Unknown": {
			conds:      []metav1.Condition{cond("BucketReady", U, "Unreachable", "no answer")},
			generation: 1, observed: 1,
			out:          Outcome{Gates: []string{"BucketReady"}},
			want:         []metav1.Condition{cond("BucketReady", U, "Unreachable", "no answer"), cond("Ready", U, "Unreachable", "no answer")},
			wantObserved: 1,
		},
		"a stall": {
			conds:      []metav1.Condition{cond("Reconciling", T, "Progressing", "x"), cond("Ready", T, "Succeeded", "old")},
			generation: 3, observed: 2,
			out:          Outcome{Stall: &StallError{Reason: "SecretNotFound", Message: "Secret ns/pw does not exist"}},
			want:         []metav1.Condition{cond("Ready", F, "SecretNotFound", "Secret ns/pw does not exist"), cond("Stalled", T, "SecretNotFound", "Secret ns/pw does not exist")},
			wantObserved: 3,
		},
		"a transient error keeps Ready True and the observed generation": {
			conds:      []metav1.Condition{cond("Ready", T, "Succeeded", "old"), cond("Stalled", T, "SecretNotFound", "x")},
			generation: 3, observed: 2,
			out:          Outcome{Err: errors.New("connection refused")},
			want:         []metav1.Condition{cond("Ready", T, "Succeeded", "old"), cond("Reconciling", T, "ReconcileError", "Retrying after an error: connection refused")},
			wantObserved: 2,
		},
		"the first probe of a generation under way": {
			conds:      []metav1.Condition{cond("Reconciling", T, "Progressing", "x"), cond("Ready", T, "Succeeded", "old")},
			generation: 2, observed: 1,
			out: Outcome{ReadyMessage: "Rendered", Gates: []string{"StateReachable"}, ProbePending: true},
			want: []metav1.Condition{
				cond("Reconciling", T, "Progressing", "Waiting for the first probe of this generation"),
				cond("Ready", U, "Progressing", "Rendered; waiting for the first probe"),
			},
			wantObserved: 1,
		},
		"a periodic probe under way changes nothing": {
			conds:      []metav1.Condition{{Type: "StateReachable", Status: T, Reason: "Reachable", Message: "ok", ObservedGeneration: 2}},
			generation: 2, observed: 2,
			out:          Outcome{ReadyMessage: "Rendered", Gates: []string{"StateReachable"}, ProbePending: true},
			want:         []metav1.Condition{cond("StateReachable", T, "Reachable", "ok"), cond("Ready", T, "Succeeded", "Rendered")},
			wantObserved: 2,
		},
		"a gate turned off does not gate Ready": {
			conds:      []metav1.Condition{{Type: "StateReachable", Status: U, Reason: "ProbeDisabled", Message: "Probing is disabled", ObservedGeneration: 1}},
			generation: 1, observed: -1,
			out:          Outcome{ReadyMessage: "Rendered", Gates: []string{"StateReachable"}, ProbePending: true},
			want:         []metav1.Condition{cond("StateReachable", U, "ProbeDisabled", "Probing is disabled"), cond("Ready", T, "Succeeded", "Rendered")},
			wantObserved: 1,
		},
		"a gate the operator cannot check does not gate Ready": {
			conds:      []metav1.Condition{cond("BucketReady", U, "AssumeRoleNotSupported", "not checked")},
			generation: 1, observed: -1,
			out:          Outcome{ReadyMessage: "Rendered", Gates: []string{"BucketReady"}},
			want:         []metav1.Condition{cond("BucketReady", U, "AssumeRoleNotSupported", "not checked"), cond("Ready", T, "Succeeded", "Rendered")},
			wantObserved: 1,
		},
		"a False gate wins over an earlier Unknown one": {
			conds:      []metav1.Condition{cond("A", U, "Unreachable", "no answer"), cond("B", F, "Forbidden", "refused")},
			generation: 1, observed: -1,
			out:          Outcome{ReadyMessage: "Rendered", Gates: []string{"A", "B"}},
			want:         []metav1.Condition{cond("A", U, "Unreachable", "no answer"), cond("B", F, "Forbidden", "refused"), cond("Ready", F, "Forbidden", "refused")},
			wantObserved: 1,
		},
		"the first False gate in declared order is reported": {
			conds:      []metav1.Condition{cond("A", F, "First", "a"), cond("B", F, "Second", "b")},
			generation: 1, observed: -1,
			out:          Outcome{ReadyMessage: "Rendered", Gates: []string{"B", "A"}},
			want:         []metav1.Condition{cond("A", F, "First", "a"), cond("B", F, "Second", "b"), cond("Ready", F, "Second", "b")},
			wantObserved: 1,
		},
		"a second gate not yet observed is awaited": {
			conds:      []metav1.Condition{cond("A", T, "Reachable", "ok")},
			generation: 1, observed: -1,
			out: Outcome{ReadyMessage: "Rendered", Gates: []string{"A", "B"}, ProbePending: true},
			want: []metav1.Condition{
				cond("A", T, "Reachable", "ok"),
				cond("Reconciling", T, "Progressing", "Waiting for the first probe of this generation"),
				cond("Ready", U, "Progressing", "Rendered; waiting for the first probe"),
			},
			wantObserved: -1,
		},
		"a transient error on a new object": {
			generation: 1, observed: -1,
			out:          Outcome{Err: errors.New("timeout")},
			want:         []metav1.Condition{cond("Reconciling", T, "ReconcileError", "Retrying after an error: timeout"), cond("Ready", F, "ReconcileError", "timeout")},
			wantObserved: -1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			conds := append([]metav1.Condition(nil), tc.conds...)
			got := Summarize(&conds, tc.generation, tc.observed, tc.out)
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
			MarkReconciling(&conds, tc.generation, tc.observed)
			if diff := cmp.Diff(tc.want, conds, ignoreTimes); diff != "" {
				t.Errorf("conditions mismatch (-want +got):\n%s", diff)
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
			got := Truncate(tc.in)
			if len(got) != tc.wantLen || !utf8.ValidString(got) {
				t.Errorf("truncate() gives %d bytes (valid UTF-8: %v), want %d", len(got), utf8.ValidString(got), tc.wantLen)
			}
		})
	}
}
