package controllers

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHolderEvidence checks each piece of evidence a Pod must show to be
// taken for the Pod a lock was taken in, at the edges of
// holderClockSkew: every margin makes the check stricter.
func TestHolderEvidence(t *testing.T) {
	taken := new(metav1.NewTime(lockTaken))
	before := lockTaken.Add(-time.Minute)
	later := lockTaken.Add(time.Hour)
	cases := map[string]struct {
		pod         *corev1.Pod
		lockCreated *metav1.Time
		now         time.Time
		recorded    bool
		want        podEvidence
	}{
		"running, created before the lock, seen after it": {pod: holderPod("u", corev1.PodRunning, before), lockCreated: taken, now: later},
		"pending, created before the lock, seen after it": {pod: holderPod("u", corev1.PodPending, before), lockCreated: taken, now: later},
		"created the clock skew before the lock": {
			pod: holderPod("u", corev1.PodRunning, lockTaken.Add(-holderClockSkew)), lockCreated: taken, now: later},
		"created less than the clock skew before the lock": {
			pod: holderPod("u", corev1.PodRunning, lockTaken.Add(-holderClockSkew+time.Nanosecond)), lockCreated: taken, now: later,
			want: podEvidence{refusal: podCreatedAfterLock, at: lockTaken.Add(-holderClockSkew + time.Nanosecond), phase: corev1.PodRunning}},
		"created with the lock": {pod: holderPod("u", corev1.PodRunning, lockTaken), lockCreated: taken, now: later,
			want: podEvidence{refusal: podCreatedAfterLock, at: lockTaken, phase: corev1.PodRunning}},
		"created after the lock, however it runs": {pod: holderPod("u", corev1.PodRunning, lockTaken.Add(time.Second)), lockCreated: taken, now: later,
			want: podEvidence{refusal: podCreatedAfterLock, at: lockTaken.Add(time.Second), phase: corev1.PodRunning}},
		"created after the lock, even when recorded": {pod: holderPod("u", corev1.PodSucceeded, lockTaken.Add(time.Second)), lockCreated: taken, now: later,
			recorded: true, want: podEvidence{refusal: podCreatedAfterLock, at: lockTaken.Add(time.Second), phase: corev1.PodSucceeded}},
		"seen the clock skew after the lock": {pod: holderPod("u", corev1.PodRunning, before), lockCreated: taken, now: lockTaken.Add(holderClockSkew)},
		"seen less than the clock skew after the lock": {pod: holderPod("u", corev1.PodRunning, before), lockCreated: taken,
			now: lockTaken.Add(holderClockSkew - time.Nanosecond), want: podEvidence{refusal: podSeenTooSoon, phase: corev1.PodRunning}},
		"seen before the lock's Created, the holder's clock ahead": {pod: holderPod("u", corev1.PodRunning, before), lockCreated: taken,
			now: lockTaken.Add(-time.Hour), want: podEvidence{refusal: podSeenTooSoon, phase: corev1.PodRunning}},
		"finished the clock skew after the lock, recorded": {pod: finishedAt(holderPod("u", corev1.PodSucceeded, before), lockTaken.Add(holderClockSkew)),
			lockCreated: taken, now: later, recorded: true},
		"finished less than the clock skew after the lock, recorded": {
			pod:         finishedAt(holderPod("u", corev1.PodSucceeded, before), lockTaken.Add(holderClockSkew-time.Nanosecond)),
			lockCreated: taken, now: later, recorded: true,
			want: podEvidence{refusal: podFinishedBeforeLock, at: lockTaken.Add(holderClockSkew - time.Nanosecond), phase: corev1.PodSucceeded}},
		"finished before the lock, still reported running": {pod: finishedAt(holderPod("u", corev1.PodRunning, before), lockTaken.Add(-time.Second)),
			lockCreated: taken, now: later, want: podEvidence{refusal: podFinishedBeforeLock, at: lockTaken.Add(-time.Second), phase: corev1.PodRunning}},
		"succeeded, recorded running before: its finish unknown": {pod: holderPod("u", corev1.PodSucceeded, before), lockCreated: taken, now: later, recorded: true},
		"gone from Running to Unknown, recorded":                 {pod: holderPod("u", corev1.PodUnknown, before), lockCreated: taken, now: later, recorded: true},
		"succeeded, never recorded": {pod: holderPod("u", corev1.PodSucceeded, before), lockCreated: taken, now: later,
			want: podEvidence{refusal: podNeverSeenRunning, phase: corev1.PodSucceeded}},
		"failed, never recorded": {pod: finishedAt(holderPod("u", corev1.PodFailed, before), later), lockCreated: taken, now: later,
			want: podEvidence{refusal: podNeverSeenRunning, phase: corev1.PodFailed}},
		"unknown, never recorded": {pod: holderPod("u", corev1.PodUnknown, before), lockCreated: taken, now: later,
			want: podEvidence{refusal: podNeverSeenRunning, phase: corev1.PodUnknown}},
		"of no phase, never recorded": {pod: holderPod("u", "", before), lockCreated: taken, now: later,
			want: podEvidence{refusal: podNeverSeenRunning}},
		"a lock without Created": {pod: holderPod("u", corev1.PodRunning, before), now: later,
			want: podEvidence{refusal: lockWithoutCreated, phase: corev1.PodRunning}},
		"a lock without Created, recorded": {pod: holderPod("u", corev1.PodSucceeded, before), now: later, recorded: true,
			want: podEvidence{refusal: lockWithoutCreated, phase: corev1.PodSucceeded}},
		"another spec.hostname": {pod: func() *corev1.Pod {
			p := holderPod("u", corev1.PodRunning, before)
			p.Spec.Hostname = "runner-8"
			return p
		}(), lockCreated: taken, now: later, want: podEvidence{refusal: podOtherHostname, phase: corev1.PodRunning}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := holderEvidence(tc.pod, "runner-7", tc.lockCreated, tc.now, tc.recorded)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(podEvidence{})); diff != "" {
				t.Errorf("holderEvidence (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodFinishedAt(t *testing.T) {
	terminated := func(at time.Time) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(at)}}}
	}
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	waiting := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}
	cases := map[string]struct {
		statuses []corev1.ContainerStatus
		want     time.Time
	}{
		"no container reported":               {},
		"one finished":                        {statuses: []corev1.ContainerStatus{terminated(lockTaken)}, want: lockTaken},
		"the last of two":                     {statuses: []corev1.ContainerStatus{terminated(lockTaken.Add(time.Minute)), terminated(lockTaken)}, want: lockTaken.Add(time.Minute)},
		"one still running":                   {statuses: []corev1.ContainerStatus{terminated(lockTaken), running}},
		"one waiting to restart":              {statuses: []corev1.ContainerStatus{waiting, terminated(lockTaken)}},
		"a container that reports no state":   {statuses: []corev1.ContainerStatus{{}}},
		"a finish the kubelet did not record": {statuses: []corev1.ContainerStatus{terminated(time.Time{})}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: tc.statuses}}
			if got := podFinishedAt(pod); !got.Equal(tc.want) {
				t.Errorf("podFinishedAt = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestHolderNoteOfRefusals checks that the Locked message says why a Pod
// of the holder's hostname is not taken for the holder's, with the times
// compared, and that the lock is left alone.
func TestHolderNoteOfRefusals(t *testing.T) {
	taken := new(metav1.NewTime(lockTaken))
	refused := func(e podEvidence, created *metav1.Time) holderSighting {
		return holderSighting{state: holderPodNotHolder, hostname: "runner-7", evidence: e, lockCreated: created}
	}
	cases := map[string]struct {
		sighting holderSighting
		mentions []string
	}{
		"no Created": {sighting: refused(podEvidence{refusal: lockWithoutCreated, phase: corev1.PodRunning}, nil),
			mentions: []string{"did not record when it took the lock", "Pod runner-7 ran after that", "leaves the lock alone"}},
		"another hostname": {sighting: refused(podEvidence{refusal: podOtherHostname, phase: corev1.PodRunning}, taken),
			mentions: []string{"Pod runner-7 sets another spec.hostname", "leaves the lock alone"}},
		"created after the lock": {sighting: refused(podEvidence{refusal: podCreatedAfterLock, at: lockTaken.Add(25 * time.Second)}, taken),
			mentions: []string{"Pod runner-7 was created at 2030-01-01T12:00:25Z, not at least 5s before the lock was taken (2030-01-01T12:00:00Z)",
				"cannot have taken the lock", "runs elsewhere", "leaves the lock alone"}},
		"finished before the lock": {sighting: refused(podEvidence{refusal: podFinishedBeforeLock, at: lockTaken.Add(-3 * time.Second)}, taken),
			mentions: []string{"Pod runner-7 finished at 2030-01-01T11:59:57Z, not at least 5s after the lock was taken (2030-01-01T12:00:00Z)",
				"cannot hold the lock", "leaves the lock alone"}},
		"never seen running": {sighting: refused(podEvidence{refusal: podNeverSeenRunning, phase: corev1.PodSucceeded}, taken),
			mentions: []string{"Pod runner-7 is Succeeded, and the operator never saw it Running or Pending while the lock was held",
				"only a Pod seen running after the lock was taken counts", "leaves the lock alone"}},
		"never seen running, of no phase": {sighting: refused(podEvidence{refusal: podNeverSeenRunning}, taken),
			mentions: []string{"Pod runner-7 is of no phase"}},
		"seen too soon": {sighting: refused(podEvidence{refusal: podSeenTooSoon, phase: corev1.PodRunning}, taken),
			mentions: []string{"Pod runner-7 is Running, but the operator's clock is not yet 5s past the lock's Created (2030-01-01T12:00:00Z)",
				"a later probe records it if it still runs then"}},
		"no Pod seen": {sighting: holderSighting{state: holderPodUnseen, hostname: "runner-7"},
			mentions: []string{"hostname runner-7 names no Pod of this namespace that the operator saw Running or Pending after the lock was taken", "leaves it alone"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := holderNote(tc.sighting, time.Minute)
			for _, m := range tc.mentions {
				if !strings.Contains(got, m) {
					t.Errorf("holderNote = %q, does not mention %q", got, m)
				}
			}
			if !strings.HasPrefix(got, " ") || !strings.HasSuffix(got, ".") {
				t.Errorf("holderNote = %q, want a sentence following another", got)
			}
		})
	}
}
