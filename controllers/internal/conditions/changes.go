package conditions

import (
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Changed returns the condition of type t in after when its status
// differs from before (or it is new).
func Changed(before, after []metav1.Condition, t string) (*metav1.Condition, bool) {
	now := meta.FindStatusCondition(after, t)
	if now == nil {
		return nil, false
	}
	was := meta.FindStatusCondition(before, t)
	return now, was == nil || was.Status != now.Status
}

// ChangedReason returns the condition of type t in after when its status
// or reason differs from before (or it is new): Changed, and a
// condition of the same status whose reason changed.
func ChangedReason(before, after []metav1.Condition, t string) (*metav1.Condition, bool) {
	now, changed := Changed(before, after, t)
	if now == nil || changed {
		return now, changed
	}
	// Unchanged status: the condition was in before.
	return now, meta.FindStatusCondition(before, t).Reason != now.Reason
}

// Clip shortens s to at most n bytes without splitting a UTF-8 sequence.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
