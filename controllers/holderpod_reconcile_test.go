package controllers

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// TestReconcileHolderGone checks lockPolicy.releaseWhenHolderGone on an
// HttpBackend: the lock of a runner pod seen while it held the lock is
// released once the pod has been finished or gone for the grace period,
// at a probe brought forward to then; a running pod's is never, nor the
// lock of a hostname that names no pod seen running after the lock was
// taken (a pod that had finished before it, a pod created after it), nor
// a new holder's on the strength of its predecessor's record, nor one
// taken by another between the probe's read and its release.
func TestReconcileHolderGone(t *testing.T) {
	held := []string{"FetchSummary", "Lock " + webLockID}
	release := slices.Concat(held, []string{"ForceUnlock " + podHolder.ID})
	getPod := &apiTraffic{reads: []string{"get Pod " + runnerPod}}
	// The first probe ends at the epoch; the second, an interval later,
	// sees the pod done.
	doneAt := harnessEpoch.Add(policyEvery * 11 / 10).Truncate(time.Second)
	slowDoneAt := harnessEpoch.Add(slowEvery * 11 / 10).Truncate(time.Second)

	cases := map[string]reconcileCase{
		"a finished runner pod's lock is released after the grace period": {
			objects: []client.Object{policyBackendEvery(releaseGone, slowEvery), passwordSecret(), runner(corev1.PodRunning)},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByPod, errHeldByPod, errHeldByPod, nil}},
			steps: []reconcileStep{{
				name:           "the pod runs",
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantEvents:     []recordedEvent{lockHeldEvent},
				wantCalls:      held,
				check: allChecks(expectHolderPod(webBackend, seenPod("Running", time.Time{})),
					expectMessageSaying(webBackend, "Locked", "runs in Pod runner-7 (Running)", "held for over 5m")),
			}, {
				name:           "the pod succeeded: the next probe is due a grace period later, before the interval",
				before:         then(setPodPhase(corev1.PodSucceeded), step(slowEvery*11/10)),
				do:             reconcileUntilProbed,
				wantRequeue:    requeueWithin(policyGrace-time.Second, policyGrace),
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantCalls:      held,
				check: allChecks(expectHolderPod(webBackend, seenPod("Succeeded", slowDoneAt)),
					expectMessageSaying(webBackend, "Locked", "ran in Pod runner-7, which has been Succeeded since")),
			}, {
				name:        "within the grace period: no probe",
				before:      step(2 * time.Minute),
				wantRequeue: requeueWithin(policyGrace-2*time.Minute-time.Second, policyGrace-2*time.Minute),
				wantTraffic: &apiTraffic{},
			}, {
				name:           "the grace period ends: the probe releases the lock",
				before:         func(e *reconcileEnv) { e.clock.SetTime(slowDoneAt.Add(policyGrace)) },
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionFalse, "HolderGoneReleased"),
				wantEvents:     []recordedEvent{goneReleasedEvent},
				wantCalls:      release,
				check: allChecks(expectHolderPod(webBackend, nil), expectLock(nil),
					expectReleased(webBackend, &backendsv1alpha1.ForceUnlockStatus{LockID: podHolder.ID, Time: metav1.NewTime(slowDoneAt.Add(policyGrace))}),
					expectMessageSaying(webBackend, "Locked", "Released lock "+podHolder.ID, "its Pod runner-7 had been Succeeded since")),
			}, {
				name:           "the next probe, an interval later, finds the lock free",
				before:         step(slowEvery * 11 / 10),
				do:             reconcileUntilProbed,
				wantRequeue:    requeueWithin(slowEvery, slowEvery*11/10),
				wantConditions: locked(metav1.ConditionFalse, "NotLocked"),
				wantCalls:      append(held, "Unlock "+webLockID),
				check:          expectHolderPod(webBackend, nil),
			}},
		},
		"within the grace period, at rest": {
			objects: []client.Object{policyBackend(releaseGone), passwordSecret(), runner(corev1.PodRunning)},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByPod}},
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{lockHeldEvent},
				wantCalls:  held,
			}, {
				before:      then(setPodPhase(corev1.PodSucceeded), step(policyEvery*11/10)),
				do:          reconcileUntilProbed,
				wantCalls:   held,
				wantRequeue: requeueWithin(policyEvery, policyEvery*11/10),
				check:       expectHolderPod(webBackend, seenPod("Succeeded", doneAt)),
			}, {
				name:        "one GET of the pod, nothing written",
				before:      step(policyEvery * 11 / 10),
				do:          reconcileUntilProbed,
				wantCalls:   held,
				wantTraffic: getPod,
				check:       expectHolderPod(webBackend, seenPod("Succeeded", doneAt)),
			}},
		},
		"a running pod's lock is never released": {
			objects: []client.Object{policyBackend(releaseGone), passwordSecret(), runner(corev1.PodRunning)},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByPod}},
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{lockHeldEvent},
				wantCalls:  held,
			}, {
				name:           "a day later, at rest: one GET of the pod, no write",
				before:         step(24 * time.Hour),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantCalls:      held,
				check:          expectHolderPod(webBackend, seenPod("Running", time.Time{})),
			}, {
				before:      step(policyEvery * 11 / 10),
				do:          reconcileUntilProbed,
				wantCalls:   held,
				wantTraffic: getPod,
			}},
		},
		"a pending pod's lock is never released": {
			objects: []client.Object{policyBackend(releaseGone), passwordSecret(), runner(corev1.PodPending)},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByPod}},
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{lockHeldEvent},
				wantCalls:  held,
			}, {
				before:         step(24 * time.Hour),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantCalls:      held,
				check:          expectHolderPod(webBackend, seenPod("Pending", time.Time{})),
			}},
		},
		"a hostname that names no pod is never released": {
			objects: []client.Object{policyBackend(releaseGone), passwordSecret()},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByPod}},
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantEvents:     []recordedEvent{lockHeldEvent},
				wantCalls:      held,
				check: allChecks(expectHolderPod(webBackend, nil),
					expectMessageSaying(webBackend, "Locked", "hostname runner-7 names no Pod of this namespace that the operator saw")),
			}, {
				before:    step(24 * time.Hour),
				do:        reconcileUntilProbed,
				wantCalls: held,
				check:     expectHolderPod(webBackend, nil),
			}},
		},
		"a hostname that cannot be a pod's is not even looked up": {
			objects: []client.Object{policyBackend(releaseGone), passwordSecret()},
			target:  webBackend,
			script:  stateScript{lock: []error{&stateclient.LockError{StatusCode: 423, Info: laptopHolder}}},
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantEvents:     []recordedEvent{lockHeldEvent},
				wantCalls:      held,
				check:          allChecks(expectHolderPod(webBackend, nil), expectMessageSaying(webBackend, "Locked", "no hostname that can name a Pod")),
			}, {
				name:        "no GET",
				before:      step(policyEvery * 11 / 10),
				do:          reconcileUntilProbed,
				wantCalls:   held,
				wantTraffic: &apiTraffic{},
			}},
		},
		"a pod deleted after it was seen: released a grace period later": {
			objects: []client.Object{policyBackend(releaseGone), passwordSecret(), runner(corev1.PodRunning)},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByPod}},
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{lockHeldEvent},
				wantCalls:  held,
			}, {
				before:    then(deletePod, step(policyEvery*11/10)),
				do:        reconcileUntilProbed,
				wantCalls: held,
				check:     expectHolderPod(webBackend, seenPod("Gone", doneAt)),
			}, {
				before:         step(policyGrace),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionFalse, "HolderGoneReleased"),
				wantEvents:     []recordedEvent{goneReleasedEvent},
				wantCalls:      release,
				check:          expectMessageSaying(webBackend, "Locked", "its Pod runner-7 had been gone since"),
			}},
		},
		"a pod replaced by another of its name: the one seen is gone": {
			objects: []client.Object{policyBackend(releaseGone), passwordSecret(), runner(corev1.PodRunning)},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByPod}},
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{lockHeldEvent},
				wantCalls:  held,
			}, {
				before: then(deletePod, func(e *reconcileEnv) {
					e.create(holderPod("uid-runner-7-again", corev1.PodRunning, harnessEpoch))
				}, step(policyEvery*11/10)),
				do:        reconcileUntilProbed,
				wantCalls: held,
				check:     expectHolderPod(webBackend, seenPod("Gone", doneAt)),
			}, {
				before:         step(policyGrace),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionFalse, "HolderGoneReleased"),
				wantEvents:     []recordedEvent{goneReleasedEvent},
				wantCalls:      release,
			}},
		},
		"a new holder does not inherit its predecessor's record": {
			objects: []client.Object{policyBackend(releaseGone), passwordSecret(), runner(corev1.PodRunning)},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByPod, errHeldByPod, errHeldByLater}},
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{lockHeldEvent},
				wantCalls:  held,
			}, {
				name:      "the pod done: gone from then",
				before:    then(setPodPhase(corev1.PodSucceeded), step(policyEvery*11/10)),
				do:        reconcileUntilProbed,
				wantCalls: held,
				check:     expectHolderPod(webBackend, seenPod("Succeeded", doneAt)),
			}, {
				name:           "another lock of the same hostname, past the first one's grace period: the pod, done, was never seen running under it",
				before:         step(policyGrace),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantEvents:     []recordedEvent{lockHeldEvent},
				wantCalls:      held,
				check: allChecks(expectHolderPod(webBackend, nil), expectLock(laterHolder),
					expectMessageSaying(webBackend, "Locked", "Pod runner-7 is Succeeded, and the operator never saw it Running or Pending while the lock was held")),
			}},
		},
		"a pod that had finished before the lock was taken is never its holder": {
			// Issue 28, attack A: the pod finished 3s before a run elsewhere,
			// under its name, took the lock.
			objects: []client.Object{policyBackend(releaseGone), passwordSecret(),
				finishedAt(runner(corev1.PodSucceeded), podHolder.Created.Add(-3*time.Second))},
			target: webBackend,
			script: stateScript{lock: []error{errHeldByPod}},
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantEvents:     []recordedEvent{lockHeldEvent},
				wantCalls:      held,
				check: allChecks(expectHolderPod(webBackend, nil), expectMessageSaying(webBackend, "Locked",
					"Pod runner-7 finished at 2030-01-01T11:49:57Z, not at least 5s after the lock was taken (2030-01-01T11:50:00Z): it cannot hold the lock")),
			}, {
				name:           "past the grace period: still held, nothing recorded",
				before:         step(policyGrace + time.Minute),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantCalls:      held,
				check:          allChecks(expectHolderPod(webBackend, nil), expectLock(podHolder), expectReleased(webBackend, nil)),
			}, {
				name:        "deleted, a day later: still held",
				before:      then(deletePod, step(24*time.Hour)),
				do:          reconcileUntilProbed,
				wantCalls:   held,
				check:       allChecks(expectHolderPod(webBackend, nil), expectReleased(webBackend, nil)),
				wantRequeue: requeueWithin(policyEvery, policyEvery*11/10),
			}},
		},
		"a pod first seen finished is never its holder": {
			objects: []client.Object{policyBackend(releaseGone), passwordSecret(), runner(corev1.PodFailed)},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByPod}},
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantEvents:     []recordedEvent{lockHeldEvent},
				wantCalls:      held,
				check: allChecks(expectHolderPod(webBackend, nil), expectMessageSaying(webBackend, "Locked",
					"Pod runner-7 is Failed, and the operator never saw it Running or Pending while the lock was held")),
			}, {
				name:           "past the grace period: still held",
				before:         step(policyGrace + time.Minute),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantCalls:      held,
				check:          allChecks(expectHolderPod(webBackend, nil), expectReleased(webBackend, nil)),
			}, {
				name:        "at rest: one GET of the pod, nothing written",
				before:      step(policyEvery * 11 / 10),
				do:          reconcileUntilProbed,
				wantCalls:   held,
				wantTraffic: getPod,
			}},
		},
		"a pod created after a lock taken outside the cluster is never its holder": {
			// Issue 28, attack B: a VM named runner-7 holds the lock; a
			// decoy Pod of that name is created 25s later, then deleted.
			objects: []client.Object{policyBackend(releaseGone), passwordSecret()},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByPod}},
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{lockHeldEvent},
				wantCalls:  held,
				check:      expectHolderPod(webBackend, nil),
			}, {
				name: "the decoy runs",
				before: then(func(e *reconcileEnv) {
					e.create(holderPod("uid-decoy", corev1.PodRunning, podHolder.Created.Add(25*time.Second)))
				}, step(policyEvery*11/10)),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantCalls:      held,
				check: allChecks(expectHolderPod(webBackend, nil), expectMessageSaying(webBackend, "Locked",
					"Pod runner-7 was created at 2030-01-01T11:50:25Z, not at least 5s before the lock was taken (2030-01-01T11:50:00Z): it cannot have taken the lock")),
			}, {
				name:      "the decoy deleted",
				before:    then(deletePod, step(policyEvery*11/10)),
				do:        reconcileUntilProbed,
				wantCalls: held,
				check: allChecks(expectHolderPod(webBackend, nil),
					expectMessageSaying(webBackend, "Locked", "hostname runner-7 names no Pod of this namespace that the operator saw Running or Pending")),
			}, {
				name:           "past the grace period: still held",
				before:         step(policyGrace + time.Minute),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantCalls:      held,
				check:          allChecks(expectHolderPod(webBackend, nil), expectLock(podHolder), expectReleased(webBackend, nil)),
			}},
		},
		"a lock taken by another between the read and the release stays": {
			objects: []client.Object{policyBackend(releaseGone), passwordSecret(), runner(corev1.PodRunning)},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByPod}, forceUnlock: []error{errTakenMeanwhile}},
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{lockHeldEvent},
				wantCalls:  held,
			}, {
				before:    then(setPodPhase(corev1.PodSucceeded), step(policyEvery*11/10)),
				do:        reconcileUntilProbed,
				wantCalls: held,
				check:     expectHolderPod(webBackend, seenPod("Succeeded", doneAt)),
			}, {
				name:           "the UNLOCK naming the holder meets the new one: no empty-body UNLOCK",
				before:         step(policyGrace),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "ServerError"),
				wantCalls:      release,
				check: allChecks(expectReleased(webBackend, nil), expectHolderPod(webBackend, seenPod("Succeeded", doneAt)),
					expectMessageSaying(webBackend, "Locked", "The release (its holder's Pod is gone) of "+podHolder.ID+" failed")),
			}, {
				name:      "a failed release is tried again at the interval, not at once",
				do:        reconcileOnce,
				wantCalls: nil,
			}},
		},
		"a policy without releaseWhenHolderGone reads no pod": {
			objects: []client.Object{policyBackend(backendsv1alpha1.LockPolicy{StaleAfter: &metav1.Duration{Duration: time.Hour}}), passwordSecret(),
				runner(corev1.PodSucceeded)},
			target: webBackend,
			script: stateScript{lock: []error{errHeldByPod}},
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{lockHeldEvent},
				wantCalls:  held,
				check:      expectHolderPod(webBackend, nil),
			}, {
				before:         step(24 * time.Hour),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "StaleLock"),
				wantEvents:     []recordedEvent{staleLockEvent},
				wantCalls:      held,
				wantTraffic:    &apiTraffic{writes: []string{"patch HttpBackend web status"}},
				check:          allChecks(expectHolderPod(webBackend, nil), expectLock(podHolder)),
			}},
		},
	}
	runReconcileCases(t, cases)
}
