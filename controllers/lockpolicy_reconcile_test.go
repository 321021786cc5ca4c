package controllers

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/testing/builders"
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
	return newWebBackend(func(b *builders.HttpBackendWrapper) {
		b.Locks().LockCheck().ProbeInterval(interval).LockPolicy(policy)
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

// expectMessageSaying checks that the message of target's condition
// condType says each of parts.
func expectMessageSaying(target objectRef, condType string, parts ...string) func(t *testing.T, e *reconcileEnv) {
	return func(t *testing.T, e *reconcileEnv) {
		t.Helper()
		c := meta.FindStatusCondition(*e.object(target).StatusConditions(), condType)
		if c == nil {
			t.Errorf("no %s condition", condType)
			return
		}
		for _, p := range parts {
			if !strings.Contains(c.Message, p) {
				t.Errorf("%s message %q does not say %q", condType, c.Message, p)
			}
		}
	}
}

// seenPod is status.holderPod of runnerPod as the cases see it: in phase,
// gone since goneSince (zero when it is not).
func seenPod(phase string, goneSince time.Time) *backendsv1alpha1.HolderPod {
	p := &backendsv1alpha1.HolderPod{Name: runnerPod, UID: "uid-runner-7", Phase: phase}
	if !goneSince.IsZero() {
		p.GoneSince = new(metav1.NewTime(goneSince))
	}
	return p
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
				check:          expectMessageSaying(webBackend, "Locked", "held for over 5m."),
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
				check:          expectMessageSaying(webBackend, "Locked", "held for over 15m, longer than lockPolicy.staleAfter (30m0s)"),
			}, {
				name:           "still stale: no warning again",
				before:         step(time.Hour),
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "StaleLock"),
				wantCalls:      held,
				check:          expectMessageSaying(webBackend, "Locked", "held for over 1h,"),
			}, {
				name:           "a new holder, stale at first sight: warned again",
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
