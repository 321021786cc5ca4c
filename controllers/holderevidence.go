package controllers

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The evidence lockPolicy.releaseWhenHolderGone needs before it takes a
// Pod for the one a lock was taken in. Anyone who may create or delete
// Pods in the namespace can make a Pod of any free name finish or
// disappear, so a Pod of the holder's hostname is not enough: the
// controller must have seen it Running or Pending after the lock was
// taken, and recorded its UID then, before it finished or disappeared.
// A Pod that finished before the lock was taken, or that was created
// after it (it cannot have taken the lock: the holder runs elsewhere, a
// VM or a laptop of the same name), is never the holder. The functions of
// this file are pure and table-tested; holderpod.go applies them.

// holderClockSkew is the margin every comparison of a Pod's times with
// its lock's Created must clear. Created comes from the holder's clock, a
// Pod's creation from the API server's, its containers' finish from the
// kubelet's (which reports a finished container a moment late) and a
// sighting from the operator's. The margin only ever makes a comparison
// stricter: a skewed clock can keep a lock, never release one.
const holderClockSkew = 5 * time.Second

// notHolder says why the Pod of a lock holder's hostname is not taken for
// the Pod the lock was taken in.
type notHolder int

const (
	// podCanHold: nothing says it is not the holder's Pod.
	podCanHold notHolder = iota
	// lockWithoutCreated: the lock does not say when it was taken, so
	// nothing can show that the Pod ran after that.
	lockWithoutCreated
	// podOtherHostname: the Pod's spec.hostname is another name.
	podOtherHostname
	// podCreatedAfterLock: the Pod was created after the lock was taken
	// (or within holderClockSkew before).
	podCreatedAfterLock
	// podFinishedBeforeLock: the Pod's containers had all finished before
	// the lock was taken (or within holderClockSkew after).
	podFinishedBeforeLock
	// podNeverSeenRunning: the Pod is neither Running nor Pending, and the
	// controller never recorded it so while the lock was held.
	podNeverSeenRunning
	// podSeenTooSoon: the Pod runs, but the controller's clock is not yet
	// holderClockSkew past the lock's Created: it cannot tell that the Pod
	// ran after the lock was taken. A later probe may.
	podSeenTooSoon
)

// podEvidence is what a Pod of the holder's hostname shows of whether the
// lock was taken in it.
type podEvidence struct {
	refusal notHolder
	// at is the time the refusal rests on: the Pod's creation
	// (podCreatedAfterLock) or its containers' finish
	// (podFinishedBeforeLock); zero otherwise.
	at time.Time
	// phase is the Pod's phase when it was refused.
	phase corev1.PodPhase
}

// holderEvidence decides whether pod, read at now under hostname, can be
// the Pod a lock taken at lockCreated was taken in. recorded is true when
// the controller has already recorded this Pod (its UID) Running or
// Pending while this lock was held: then only the Pod's finish, which can
// be learned late, is checked again.
func holderEvidence(pod *corev1.Pod, hostname string, lockCreated *metav1.Time, now time.Time, recorded bool) podEvidence {
	refuse := func(r notHolder, at time.Time) podEvidence {
		return podEvidence{refusal: r, at: at, phase: pod.Status.Phase}
	}
	if lockCreated == nil {
		return refuse(lockWithoutCreated, time.Time{})
	}
	if pod.Spec.Hostname != "" && pod.Spec.Hostname != hostname {
		return refuse(podOtherHostname, time.Time{})
	}
	if created := pod.CreationTimestamp.Time; created.After(lockCreated.Add(-holderClockSkew)) {
		return refuse(podCreatedAfterLock, created)
	}
	if finished := podFinishedAt(pod); !finished.IsZero() && finished.Before(lockCreated.Add(holderClockSkew)) {
		return refuse(podFinishedBeforeLock, finished)
	}
	if recorded {
		return podEvidence{}
	}
	switch pod.Status.Phase {
	case corev1.PodRunning, corev1.PodPending:
	default:
		return refuse(podNeverSeenRunning, time.Time{})
	}
	if now.Before(lockCreated.Add(holderClockSkew)) {
		return refuse(podSeenTooSoon, time.Time{})
	}
	return podEvidence{}
}

// podFinishedAt is when the last of pod's containers finished, as the
// kubelet reported it: zero while one has not finished, or when none
// reported.
func podFinishedAt(pod *corev1.Pod) time.Time {
	var last time.Time
	for _, s := range pod.Status.ContainerStatuses {
		if s.State.Terminated == nil {
			return time.Time{}
		}
		if t := s.State.Terminated.FinishedAt.Time; t.After(last) {
			last = t
		}
	}
	return last
}

// refusalNote is the sentence of the Locked message that says why the
// Pod named pod is not taken for the holder's, for a lock taken at
// lockCreated. It names no time that changes from one probe to the next.
func refusalNote(pod string, e podEvidence, lockCreated *metav1.Time) string {
	const leaves = "so lockPolicy.releaseWhenHolderGone leaves the lock alone"
	created := ""
	if lockCreated != nil {
		created = lockCreated.UTC().Format(time.RFC3339)
	}
	switch e.refusal {
	case lockWithoutCreated:
		return fmt.Sprintf(" Its holder did not record when it took the lock, so nothing shows that Pod %s ran after that; %s.", pod, leaves)
	case podOtherHostname:
		return fmt.Sprintf(" Pod %s sets another spec.hostname, so the lock was not taken in it; %s.", pod, leaves)
	case podCreatedAfterLock:
		return fmt.Sprintf(" Pod %s was created at %s, not at least %s before the lock was taken (%s): it cannot have taken the lock, "+
			"whose holder runs elsewhere under that name; %s.", pod, e.at.UTC().Format(time.RFC3339), holderClockSkew, created, leaves)
	case podFinishedBeforeLock:
		return fmt.Sprintf(" Pod %s finished at %s, not at least %s after the lock was taken (%s): it cannot hold the lock; %s.",
			pod, e.at.UTC().Format(time.RFC3339), holderClockSkew, created, leaves)
	case podNeverSeenRunning:
		return fmt.Sprintf(" Pod %s is %s, and the operator never saw it Running or Pending while the lock was held: "+
			"only a Pod seen running after the lock was taken counts as its holder, %s.", pod, phaseOrUnknown(e.phase), leaves)
	case podSeenTooSoon:
		return fmt.Sprintf(" Pod %s is %s, but the operator's clock is not yet %s past the lock's Created (%s), so it cannot tell that the Pod "+
			"runs after the lock was taken; a later probe records it if it still runs then.", pod, e.phase, holderClockSkew, created)
	}
	return ""
}

// phaseOrUnknown is phase, or "of no phase" when the Pod reports none.
func phaseOrUnknown(phase corev1.PodPhase) string {
	if phase == "" {
		return "of no phase"
	}
	return string(phase)
}
