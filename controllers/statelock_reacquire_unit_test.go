package controllers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// Reacquire values of the tables: long ones are longer than
// status.reacquireRequest may be.
var (
	long300 = strings.Repeat("r", 300)
	long257 = strings.Repeat("r", 257)
	// digest300 is reacquireRecord(long300).
	digest300 = "sha256:4b7ae0000877ab8fb7ee8568c99110a39abf161c8dfdaea5ed79b95968ab60c7"
)

func TestReacquireRecord(t *testing.T) {
	cases := map[string]struct {
		value, want string
	}{
		"no annotation":         {value: "", want: ""},
		"a short value is kept": {value: "2026-03-01T12:00:00Z", want: "2026-03-01T12:00:00Z"},
		"256 bytes are kept":    {value: strings.Repeat("r", 256), want: strings.Repeat("r", 256)},
		"257 bytes are digested": {
			value: long257, want: "sha256:62f1ad91072eb59aba4e093d8953818cb6b4d9215f944edf7ef46f8d6e8381ed",
		},
		"300 bytes are digested": {value: long300, want: digest300},
		"200 two-byte characters (400 bytes) are digested": {
			value: strings.Repeat("é", 200), want: "sha256:df20b2aa6262e99e133aa7f3614be707d35c4155d17e2aa7cbb49da555a454c3",
		},
		"a short value spelling a digest is digested": {
			value: "sha256:abc", want: "sha256:67e9bc3cfd2163c2978358dfe00d2f912cd4ee0c99f077c3583b39b48aebb124",
		},
		"a value spelling the digest of a long one is not its record": {
			value: digest300, want: reacquireRecord(digest300),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := reacquireRecord(tc.value)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reacquireRecord() mismatch (-want +got):\n%s", diff)
			}
			if len(got) > maxReacquireRequest {
				t.Errorf("reacquireRecord() is %d bytes, status holds %d", len(got), maxReacquireRequest)
			}
		})
	}
	if reacquireRecord(digest300) == digest300 {
		t.Errorf("the value %q reads as the record of a 300-byte value", digest300)
	}
}

func TestLockLostLongReacquire(t *testing.T) {
	cases := map[string]struct {
		sl   *backendsv1alpha1.StateLock
		want bool
	}{
		"lost with a long value, its digest recorded": {
			sl:   makeSlock().Annotation(backendsv1alpha1.ReacquireAnnotation, long300).ReacquireRequest(digest300).Condition(slockLost(1)).Obj(),
			want: true,
		},
		"lost, a new long value": {
			sl: makeSlock().Annotation(backendsv1alpha1.ReacquireAnnotation, long257).ReacquireRequest(digest300).Condition(slockLost(1)).Obj(),
		},
		"lost, the long value after a short one": {
			sl: makeSlock().Annotation(backendsv1alpha1.ReacquireAnnotation, long300).ReacquireRequest("a1").Condition(slockLost(1)).Obj(),
		},
		"lost, a short value spelling the recorded digest": {
			sl: makeSlock().Annotation(backendsv1alpha1.ReacquireAnnotation, digest300).ReacquireRequest(digest300).Condition(slockLost(1)).Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := lockLost(tc.sl); got != tc.want {
				t.Errorf("lockLost() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestApplySlockResultRecordsLongReacquireDigest(t *testing.T) {
	sl := makeSlock().Annotation(backendsv1alpha1.ReacquireAnnotation, long300).
		Holds(slockInfo(slockCreated)).Condition(slockLocked("True", "LockAcquired", 1, slockCreated)).Obj()
	applySlockResult(sl, slockResult{action: slockHold}, slockBackend, nil)
	if diff := cmp.Diff(digest300, sl.Status.ReacquireRequest); diff != "" {
		t.Errorf("status.reacquireRequest mismatch (-want +got):\n%s", diff)
	}
	if !lockLost(sl) {
		t.Errorf("lockLost() = false after the loss was recorded, want true: the lost lock would be taken again unasked")
	}
}
