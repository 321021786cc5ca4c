package controllers

import (
	"context"
	"crypto/md5" // the COS lock ID is the MD5 of the .tflock object
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos/costest"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// The lockPolicy cases: a runner pod "runner-7" of the harness namespace
// holds the lock, and the backends release it once the pod is gone for
// policyGrace.
const (
	policyGrace = 5 * time.Minute
	policyEvery = time.Minute
	runnerPod   = "runner-7"
)

var (
	// podHolder is a Terraform run in runnerPod, which took the lock ten
	// minutes before the cases start.
	podHolder = &stateclient.LockInfo{
		ID: "9b7c1e4a-2f3d-4c5b-8a6e-1d2c3b4a5f60", Operation: "OperationTypeApply", Who: "runner@" + runnerPod,
		Version: "1.9.8", Path: "team-a/web", Created: harnessEpoch.Add(-10 * time.Minute),
	}
	errHeldByPod = &stateclient.LockError{StatusCode: 423, Info: podHolder}
	// laterHolder took the lock after podHolder's release, in a pod of
	// the same name.
	laterHolder = &stateclient.LockInfo{
		ID: "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", Operation: "OperationTypeApply", Who: "runner@" + runnerPod,
		Created: harnessEpoch.Add(2 * time.Minute),
	}
	errHeldByLater = &stateclient.LockError{StatusCode: 423, Info: laterHolder}
	// errTakenMeanwhile is the answer of a server whose lock another
	// holder took between the probe's read and its release.
	errTakenMeanwhile = &stateclient.LockError{StatusCode: 409, Info: &stateclient.LockInfo{ID: "another-holder", Who: "bob@laptop"}}
)

// laptopHolder is a run on a laptop whose hostname cannot name a Pod.
var laptopHolder = &stateclient.LockInfo{ID: "c0ffee00-0000-4000-8000-000000000001", Who: "alice@Alices-MacBook-Pro", Created: harnessEpoch.Add(-10 * time.Minute)}

// Events of the lockPolicy cases.
var (
	staleLockEvent    = recordedEvent{Object: "web", Type: corev1.EventTypeWarning, Reason: "StaleLock", Action: "Probe"}
	goneReleasedEvent = recordedEvent{Object: "web", Type: corev1.EventTypeNormal, Reason: "HolderGoneReleased", Action: "ForceUnlock"}
)

// policyBackend is the HttpBackend "web" checking its lock every
// policyEvery under lockPolicy.
func policyBackend(policy backendsv1alpha1.LockPolicy) client.Object {
	return policyBackendEvery(policy, policyEvery)
}

// policyBackendEvery is policyBackend checking its lock every interval.
func policyBackendEvery(policy backendsv1alpha1.LockPolicy, interval time.Duration) client.Object {
	return newWebBackend(func(b *httpBackendBuilder) {
		b.locks().lockCheck().probeInterval(interval)
		b.obj.Spec.LockPolicy = &policy
	})
}

// slowEvery is the interval of the cases whose release must come before
// the next periodic probe: longer than policyGrace.
const slowEvery = 4 * policyGrace

// releaseGone is a lockPolicy releasing gone holders after policyGrace.
var releaseGone = backendsv1alpha1.LockPolicy{ReleaseWhenHolderGone: true, GracePeriod: &metav1.Duration{Duration: policyGrace}}

// runner is runnerPod in phase, created before podHolder took the lock.
func runner(phase corev1.PodPhase) *corev1.Pod {
	return holderPod("uid-runner-7", phase, podHolder.Created.Add(-time.Minute))
}

// setPodPhase moves runnerPod to phase, through the status subresource
// as a kubelet does.
func setPodPhase(phase corev1.PodPhase) func(e *reconcileEnv) {
	return func(e *reconcileEnv) {
		e.t.Helper()
		pod := &corev1.Pod{}
		if err := e.client.Get(e.ctx, client.ObjectKey{Namespace: harnessNamespace, Name: runnerPod}, pod); err != nil {
			e.t.Fatalf("reading Pod %s: %v", runnerPod, err)
		}
		pod.Status.Phase = phase
		if err := e.client.Status().Update(e.ctx, pod); err != nil {
			e.t.Fatalf("updating the status of Pod %s: %v", runnerPod, err)
		}
	}
}

// deletePod deletes runnerPod.
func deletePod(e *reconcileEnv) {
	if err := e.client.Delete(e.ctx, runner(corev1.PodRunning)); err != nil {
		e.t.Fatalf("deleting Pod %s: %v", runnerPod, err)
	}
}

// step moves the fake clock on by d.
func step(d time.Duration) func(e *reconcileEnv) { return func(e *reconcileEnv) { e.clock.Step(d) } }

// then runs changes in turn.
func then(changes ...func(e *reconcileEnv)) func(e *reconcileEnv) {
	return func(e *reconcileEnv) {
		for _, c := range changes {
			c(e)
		}
	}
}

// expectHolderPod checks status.holderPod of the backend target.
func expectHolderPod(target objectRef, want *backendsv1alpha1.HolderPod) func(t *testing.T, e *reconcileEnv) {
	return func(t *testing.T, e *reconcileEnv) {
		t.Helper()
		got := e.object(target).(backendObject).SharedStatus().HolderPod
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("status.holderPod (-want +got):\n%s", diff)
		}
	}
}

// expectReleased checks status.lastForceUnlock of the backend target.
func expectReleased(target objectRef, want *backendsv1alpha1.ForceUnlockStatus) func(t *testing.T, e *reconcileEnv) {
	return func(t *testing.T, e *reconcileEnv) {
		t.Helper()
		if diff := cmp.Diff(want, e.object(target).(backendObject).SharedStatus().LastForceUnlock); diff != "" {
			t.Errorf("status.lastForceUnlock (-want +got):\n%s", diff)
		}
	}
}

// expectLockedSaying checks that the Locked message of target says each
// of parts.
func expectLockedSaying(target objectRef, parts ...string) func(t *testing.T, e *reconcileEnv) {
	return func(t *testing.T, e *reconcileEnv) {
		t.Helper()
		for _, c := range *e.object(target).StatusConditions() {
			if c.Type != "Locked" {
				continue
			}
			for _, p := range parts {
				if !strings.Contains(c.Message, p) {
					t.Errorf("Locked message %q does not say %q", c.Message, p)
				}
			}
			return
		}
		t.Errorf("no Locked condition")
	}
}

// seenPod is status.holderPod of runnerPod as the cases see it: in phase,
// gone since goneSince (zero when it is not).
func seenPod(phase string, goneSince time.Time) *backendsv1alpha1.HolderPod {
	p := &backendsv1alpha1.HolderPod{Name: runnerPod, UID: "uid-runner-7", Phase: phase}
	if !goneSince.IsZero() {
		p.GoneSince = takenAt(goneSince)
	}
	return p
}

// TestReconcileHolderGone checks lockPolicy.releaseWhenHolderGone on an
// HttpBackend: the lock of a runner pod seen while it held the lock is
// released once the pod has been finished or gone for the grace period,
// at a probe brought forward to then; a running pod's is never, nor the
// lock of a hostname that names no pod seen, nor a new holder's on the
// strength of its predecessor's record, nor one taken by another between
// the probe's read and its release.
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
					expectLockedSaying(webBackend, "runs in Pod runner-7 (Running)", "held for over 5m")),
			}, {
				name:           "the pod succeeded: the next probe is due a grace period later, before the interval",
				before:         then(setPodPhase(corev1.PodSucceeded), step(slowEvery*11/10)),
				do:             reconcileUntilProbed,
				wantRequeue:    requeueWithin(policyGrace-time.Second, policyGrace),
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantCalls:      held,
				check: allChecks(expectHolderPod(webBackend, seenPod("Succeeded", slowDoneAt)),
					expectLockedSaying(webBackend, "ran in Pod runner-7, which has been Succeeded since")),
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
					expectLockedSaying(webBackend, "Released lock "+podHolder.ID, "its Pod runner-7 had been Succeeded since")),
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
			objects: []client.Object{policyBackend(releaseGone), passwordSecret(), runner(corev1.PodSucceeded)},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByPod}},
			steps: []reconcileStep{{
				do:          reconcileUntilProbed,
				wantEvents:  []recordedEvent{lockHeldEvent},
				wantCalls:   held,
				wantRequeue: requeueWithin(policyEvery, policyEvery*11/10),
				check:       expectHolderPod(webBackend, seenPod("Succeeded", harnessEpoch)),
			}, {
				name:        "one GET of the pod, nothing written",
				before:      step(policyEvery * 11 / 10),
				do:          reconcileUntilProbed,
				wantCalls:   held,
				wantTraffic: getPod,
				check:       expectHolderPod(webBackend, seenPod("Succeeded", harnessEpoch)),
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
					expectLockedSaying(webBackend, "hostname runner-7 names no Pod of this namespace that the operator saw")),
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
				check:          allChecks(expectHolderPod(webBackend, nil), expectLockedSaying(webBackend, "no hostname that can name a Pod")),
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
				check:          expectLockedSaying(webBackend, "its Pod runner-7 had been gone since"),
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
			objects: []client.Object{policyBackend(releaseGone), passwordSecret(), runner(corev1.PodSucceeded)},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByPod, errHeldByLater}},
			steps: []reconcileStep{{
				name:       "the pod is done at first sight: gone from then",
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{lockHeldEvent},
				wantCalls:  held,
				check:      expectHolderPod(webBackend, seenPod("Succeeded", harnessEpoch)),
			}, {
				name:           "another lock of the same hostname: a new record, a new grace period",
				before:         step(policyGrace + time.Second),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantEvents:     []recordedEvent{lockHeldEvent},
				wantCalls:      held,
				// The pod was created before laterHolder's lock: it can be
				// its holder, and its grace period starts now.
				check: expectHolderPod(webBackend, seenPod("Succeeded", harnessEpoch.Add(policyGrace+time.Second))),
			}},
		},
		"a lock taken by another between the read and the release stays": {
			objects: []client.Object{policyBackend(releaseGone), passwordSecret(), runner(corev1.PodSucceeded)},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByPod}, forceUnlock: []error{errTakenMeanwhile}},
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{lockHeldEvent},
				wantCalls:  held,
			}, {
				name:           "the UNLOCK naming the holder meets the new one: no empty-body UNLOCK",
				before:         step(policyGrace),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "ServerError"),
				wantCalls:      release,
				check: allChecks(expectReleased(webBackend, nil), expectHolderPod(webBackend, seenPod("Succeeded", harnessEpoch)),
					expectLockedSaying(webBackend, "The release (its holder's Pod is gone) of "+podHolder.ID+" failed")),
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

// heldCallsOf is the calls of a probe that finds the lock held.
func heldCallsOf() []string { return []string{"FetchSummary", "Lock " + webLockID} }

// TestReconcileStaleLock checks lockPolicy.staleAfter: a lock held
// longer is StaleLock with one Warning, not repeated while it stays
// stale, repeated for a new holder; the message changes only when the
// lock's age passes a step.
func TestReconcileStaleLock(t *testing.T) {
	policy := backendsv1alpha1.LockPolicy{StaleAfter: &metav1.Duration{Duration: 30 * time.Minute}}
	held := heldCallsOf()
	cases := map[string]reconcileCase{
		"a lock turns stale": {
			objects: []client.Object{policyBackend(policy), passwordSecret()},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByPod, errHeldByPod, errHeldByPod, errHeldByPod, errHeldByLater}},
			steps: []reconcileStep{{
				name:           "ten minutes old",
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantEvents:     []recordedEvent{lockHeldEvent},
				wantCalls:      held,
				check:          expectLockedSaying(webBackend, "held for over 5m."),
			}, {
				name:        "a minute later, in the same step of age: nothing written",
				before:      step(policyEvery * 11 / 10),
				do:          reconcileUntilProbed,
				wantCalls:   held,
				wantTraffic: &apiTraffic{},
			}, {
				name:           "past staleAfter: one warning",
				before:         step(25 * time.Minute),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "StaleLock"),
				wantEvents:     []recordedEvent{staleLockEvent},
				wantCalls:      held,
				check:          expectLockedSaying(webBackend, "held for over 15m, longer than lockPolicy.staleAfter (30m0s)"),
			}, {
				name:           "still stale: no warning again",
				before:         step(time.Hour),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "StaleLock"),
				wantCalls:      held,
				check:          expectLockedSaying(webBackend, "held for over 1h,"),
			}, {
				name:           "a new holder, fresh: no warning",
				before:         step(policyEvery * 11 / 10),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "StaleLock"),
				wantEvents:     []recordedEvent{staleLockEvent},
				wantCalls:      held,
			}},
		},
	}
	runReconcileCases(t, cases)
}

// podLockJSON is a .tflock object of a Terraform run in runnerPod, taken
// ten minutes before the cases start.
var podLockJSON = func() string {
	data, err := json.Marshal(map[string]string{
		"ID": "0f6b6d2c-4a8e-4a51-9d1e-7c2b1f0e9a11", "Operation": "OperationTypeApply", "Info": "", "Who": "runner@" + runnerPod,
		"Version": "1.9.8", "Created": harnessEpoch.Add(-10 * time.Minute).Format(time.RFC3339Nano), "Path": netLockKey,
	})
	if err != nil {
		panic(err)
	}
	return string(data)
}()

// md5Hex is the COS lock ID of a .tflock object.
func md5Hex(data string) string {
	sum := md5.Sum([]byte(data))
	return hex.EncodeToString(sum[:])
}

// TestReconcileCosHolderGone checks lockPolicy.releaseWhenHolderGone on a
// CosBackend, against the COS test double: the same decisions as an
// HttpBackend's, with the release checking the .tflock object's ID.
func TestReconcileCosHolderGone(t *testing.T) {
	backendEvery := func(every time.Duration) client.Object {
		return newNetBackend(func(b *backendsv1alpha1.CosBackend) {
			b.Spec.Probe = &backendsv1alpha1.ProbeSpec{Interval: &metav1.Duration{Duration: every}}
			policy := releaseGone
			policy.StaleAfter = &metav1.Duration{Duration: time.Hour}
			b.Spec.LockPolicy = &policy
		})
	}
	backend := func() client.Object { return backendEvery(policyEvery) }
	podLocked := func(s *costest.Server) {
		s.CreateBucket(netBucket)
		s.PutState(netBucket, netLockKey, []byte(podLockJSON))
	}
	lockObject := func(t *testing.T, e *reconcileEnv) string {
		t.Helper()
		data, _, ok := e.cos.Object(netBucket, netLockKey)
		if !ok {
			return ""
		}
		return string(data)
	}
	expectLockObject := func(want string) func(t *testing.T, e *reconcileEnv) {
		return func(t *testing.T, e *reconcileEnv) {
			t.Helper()
			if got := lockObject(t, e); got != want {
				t.Errorf("the .tflock object holds %q, want %q", got, want)
			}
		}
	}
	netHeld := recordedEvent{Object: "net", Type: corev1.EventTypeNormal, Reason: "LockHeld", Action: "Probe"}
	netGoneReleased := recordedEvent{Object: "net", Type: corev1.EventTypeNormal, Reason: "HolderGoneReleased", Action: "ForceUnlock"}
	otherLock := strings.Replace(podLockJSON, "runner@"+runnerPod, "bob@laptop", 1)
	race := &lockTakeover{}
	doneAt := harnessEpoch.Add(slowEvery * 11 / 10).Truncate(time.Second)

	cases := map[string]reconcileCase{
		"a finished runner pod's lock is released after the grace period": {
			objects: []client.Object{backendEvery(slowEvery), cosCredentials(harnessNamespace), runner(corev1.PodRunning)},
			cos:     podLocked,
			target:  netBackend,
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: bucketReady(wantCond("Locked", metav1.ConditionTrue, "LockHeld")),
				wantEvents:     []recordedEvent{netHeld},
				check:          expectHolderPod(netBackend, seenPod("Running", time.Time{})),
			}, {
				before:      then(setPodPhase(corev1.PodFailed), step(slowEvery*11/10)),
				do:          reconcileUntilProbed,
				wantRequeue: requeueWithin(policyGrace-time.Second, policyGrace),
				check:       allChecks(expectHolderPod(netBackend, seenPod("Failed", doneAt)), expectLockObject(podLockJSON)),
			}, {
				before:         func(e *reconcileEnv) { e.clock.SetTime(doneAt.Add(policyGrace)) },
				do:             reconcileUntilProbed,
				wantConditions: bucketReady(wantCond("Locked", metav1.ConditionFalse, "HolderGoneReleased")),
				wantEvents:     []recordedEvent{netGoneReleased},
				check: allChecks(expectLockObject(""), expectHolderPod(netBackend, nil),
					expectReleased(netBackend, &backendsv1alpha1.ForceUnlockStatus{LockID: md5Hex(podLockJSON), Time: metav1.NewTime(doneAt.Add(policyGrace))}),
					expectLockedSaying(netBackend, "its Pod runner-7 had been Failed since")),
			}},
		},
		"a running pod's lock is never released": {
			objects: []client.Object{backend(), cosCredentials(harnessNamespace), runner(corev1.PodRunning)},
			cos:     podLocked,
			target:  netBackend,
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{netHeld},
			}, {
				name:           "a day later: stale, still held",
				before:         step(24 * time.Hour),
				do:             reconcileUntilProbed,
				wantConditions: bucketReady(wantCond("Locked", metav1.ConditionTrue, "StaleLock")),
				wantEvents:     []recordedEvent{{Object: "net", Type: corev1.EventTypeWarning, Reason: "StaleLock", Action: "Probe"}},
				check:          allChecks(expectLockObject(podLockJSON), expectHolderPod(netBackend, seenPod("Running", time.Time{}))),
			}},
		},
		"a hostname that names no pod is never released": {
			objects: []client.Object{backend(), cosCredentials(harnessNamespace)},
			cos:     podLocked,
			target:  netBackend,
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{netHeld},
				check:      expectHolderPod(netBackend, nil),
			}, {
				before:     step(24 * time.Hour),
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{{Object: "net", Type: corev1.EventTypeWarning, Reason: "StaleLock", Action: "Probe"}},
				check:      allChecks(expectLockObject(podLockJSON), expectHolderPod(netBackend, nil)),
			}},
		},
		"a lock taken by another between the read and the release stays": {
			objects:   []client.Object{backend(), cosCredentials(harnessNamespace), runner(corev1.PodSucceeded)},
			cos:       func(s *costest.Server) { podLocked(s); race.server = s },
			intercept: race.funcs(),
			target:    netBackend,
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{netHeld},
				check:      expectHolderPod(netBackend, seenPod("Succeeded", harnessEpoch)),
			}, {
				name: "another takes the lock as the probe reads the pod: after its read of the lock, before its release",
				before: func(e *reconcileEnv) {
					e.clock.Step(policyGrace)
					race.arm([]byte(otherLock))
				},
				do:             reconcileUntilProbed,
				wantConditions: bucketReady(wantCond("Locked", metav1.ConditionTrue, "ServerError")),
				check: allChecks(expectLockObject(otherLock), expectReleased(netBackend, nil),
					expectLockedSaying(netBackend, "the lock is not held", "the lock held is "+md5Hex(otherLock))),
			}, {
				name:           "the next probe sees the new holder",
				before:         step(policyEvery * 11 / 10),
				do:             reconcileUntilProbed,
				wantConditions: bucketReady(wantCond("Locked", metav1.ConditionTrue, "LockHeld")),
				wantEvents:     []recordedEvent{netHeld},
				check:          allChecks(expectLockObject(otherLock), expectHolderPod(netBackend, nil)),
			}},
		},
	}
	runReconcileCases(t, cases)
}

// lockTakeover replaces the .tflock object of netBucket when the
// reconciler next reads a Pod, once armed: another holder takes the lock
// after the probe read it and before the probe releases it.
type lockTakeover struct {
	mu     sync.Mutex
	server *costest.Server
	data   []byte
}

// arm makes the next read of a Pod store data as the lock object.
func (l *lockTakeover) arm(data []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.data = data
}

// funcs intercepts the fake client's reads of Pods.
func (l *lockTakeover) funcs() *interceptor.Funcs {
	return &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*corev1.Pod); ok {
			l.mu.Lock()
			if l.data != nil {
				l.server.PutState(netBucket, netLockKey, l.data)
				l.data = nil
			}
			l.mu.Unlock()
		}
		return c.Get(ctx, key, obj, opts...)
	}}
}
