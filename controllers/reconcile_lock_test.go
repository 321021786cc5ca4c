package controllers

import (
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// The lock holder of the lock cases: a Terraform run of someone else.
var (
	runHolder = &stateclient.LockInfo{
		ID: "5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f", Operation: "OperationTypeApply", Who: "alice@ci-runner-7",
		Version: "1.9.8", Path: "team-a/web", Created: time.Date(2029, time.December, 31, 23, 0, 0, 0, time.UTC),
	}
	// errHeldByRun is the answer of a server whose lock runHolder holds.
	errHeldByRun = &stateclient.LockError{StatusCode: 423, Info: runHolder}
	// errLockServer and errLockNetwork are failed LOCKs: the lock cannot
	// be read.
	errLockServer  = &stateclient.StatusError{Method: "LOCK", URL: harnessAddress, StatusCode: 500}
	errLockNetwork = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
)

// webLockID is the ID of the lock the lock check of backend "web" takes.
var webLockID = lockCheckID("uid-web")

// Events of the lock cases.
var (
	lockHeldEvent     = recordedEvent{Object: "web", Type: corev1.EventTypeNormal, Reason: "LockHeld", Action: "Probe"}
	lockReleasedEvent = recordedEvent{Object: "web", Type: corev1.EventTypeNormal, Reason: "LockReleased", Action: "Probe"}
	forceUnlockedEvt  = recordedEvent{Object: "web", Type: corev1.EventTypeNormal, Reason: "ForceUnlocked", Action: "ForceUnlock"}
)

// locked is the conditions of a reachable backend whose Locked condition
// has status and reason.
func locked(status metav1.ConditionStatus, reason string) []metav1.Condition {
	return []metav1.Condition{
		wantCond("Ready", metav1.ConditionTrue, "Succeeded"),
		wantCond("StateReachable", metav1.ConditionTrue, "Reachable"),
		wantCond("Locked", status, reason),
	}
}

// expectLock checks status.lock of backend "web".
func expectLock(want *stateclient.LockInfo) func(t *testing.T, e *reconcileEnv) {
	return func(t *testing.T, e *reconcileEnv) {
		t.Helper()
		if diff := cmp.Diff(lockInfo(want), e.httpBackend("web").Status.Lock); diff != "" {
			t.Errorf("status.lock (-want +got):\n%s", diff)
		}
	}
}

// TestReconcileLockCheck checks what spec.probe.lockCheck reports: a free
// lock (taken and released at once with the check's own ID), a lock held
// by someone else (its holder in status.lock, an event), a lock that
// cannot be read (Unknown, the last holder kept, no release reported) and
// a held lock that is then free (LockReleased).
func TestReconcileLockCheck(t *testing.T) {
	const every = time.Minute
	backend := func() client.Object {
		return newWebBackend(func(b *builders.HttpBackendWrapper) { b.Locks().LockCheck().ProbeInterval(every) })
	}
	nextProbe := func(e *reconcileEnv) { e.clock.Step(every * 11 / 10) }
	freeCalls := []string{"FetchSummary", "Lock " + webLockID, "Unlock " + webLockID}
	heldCalls := []string{"FetchSummary", "Lock " + webLockID}

	cases := map[string]reconcileCase{
		"a free lock": {
			objects: []client.Object{backend(), passwordSecret()},
			target:  webBackend,
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionFalse, "NotLocked"),
				wantCalls:      freeCalls,
				check:          expectLock(nil),
			}},
		},
		"a lock held by another": {
			objects: []client.Object{backend(), passwordSecret()},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByRun}},
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantEvents:     []recordedEvent{lockHeldEvent},
				wantCalls:      heldCalls,
				check:          expectLock(runHolder),
			}, {
				name:           "still held: no event again",
				before:         nextProbe,
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantCalls:      heldCalls,
				check:          expectLock(runHolder),
			}},
		},
		"a LOCK answered with 500 keeps the last holder": {
			objects: []client.Object{backend(), passwordSecret()},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByRun, errLockServer}},
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{lockHeldEvent},
				wantCalls:  heldCalls,
			}, {
				before:         nextProbe,
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionUnknown, "ServerError"),
				wantCalls:      heldCalls,
				check:          expectLock(runHolder),
			}},
		},
		"a LOCK that cannot reach the server keeps the last holder": {
			objects: []client.Object{backend(), passwordSecret()},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByRun, errLockNetwork}},
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{lockHeldEvent},
				wantCalls:  heldCalls,
			}, {
				before:         nextProbe,
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionUnknown, "Unreachable"),
				wantCalls:      heldCalls,
				check:          expectLock(runHolder),
			}},
		},
		"a held lock that is then free": {
			objects: []client.Object{backend(), passwordSecret()},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByRun, nil}},
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{lockHeldEvent},
				wantCalls:  heldCalls,
			}, {
				before:         nextProbe,
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionFalse, "NotLocked"),
				wantEvents:     []recordedEvent{lockReleasedEvent},
				wantCalls:      freeCalls,
				check:          expectLock(nil),
			}},
		},
		"a held lock, then a failed read, then a free lock": {
			objects: []client.Object{backend(), passwordSecret()},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByRun, errLockServer, nil}},
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{lockHeldEvent},
				wantCalls:  heldCalls,
			}, {
				before:         nextProbe,
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionUnknown, "ServerError"),
				wantCalls:      heldCalls,
				check:          expectLock(runHolder),
			}, {
				before:         nextProbe,
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionFalse, "NotLocked"),
				wantEvents:     []recordedEvent{lockReleasedEvent},
				wantCalls:      freeCalls,
				check:          expectLock(nil),
			}},
		},
		"a held lock, then a failed read, then the same holder": {
			objects: []client.Object{backend(), passwordSecret()},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByRun, errLockServer, errHeldByRun}},
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{lockHeldEvent},
				wantCalls:  heldCalls,
			}, {
				before:         nextProbe,
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionUnknown, "ServerError"),
				wantCalls:      heldCalls,
			}, {
				before:         nextProbe,
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "LockHeld"),
				wantCalls:      heldCalls,
				check:          expectLock(runHolder),
			}},
		},
	}
	runReconcileCases(t, cases)
}

// TestReconcileForceUnlock checks spec.forceUnlock: the lock it names is
// released (with the ID body, then the empty body when the server refuses
// that form), recorded in status.lastForceUnlock and audited by an event;
// a lock held under another ID is left alone.
func TestReconcileForceUnlock(t *testing.T) {
	backend := func(id string) client.Object {
		return newWebBackend(func(b *builders.HttpBackendWrapper) { b.Locks().ForceUnlock(id) })
	}
	expectLastForceUnlock := func(want *backendsv1alpha1.ForceUnlockStatus) func(t *testing.T, e *reconcileEnv) {
		return func(t *testing.T, e *reconcileEnv) {
			t.Helper()
			if diff := cmp.Diff(want, e.httpBackend("web").Status.LastForceUnlock); diff != "" {
				t.Errorf("status.lastForceUnlock (-want +got):\n%s", diff)
			}
		}
	}
	// released is status.lastForceUnlock after the release of runHolder's
	// lock by the first probe, which ends at the fake clock's start.
	released := &backendsv1alpha1.ForceUnlockStatus{LockID: runHolder.ID, Time: metav1.NewTime(harnessEpoch)}
	both := func(checks ...func(*testing.T, *reconcileEnv)) func(*testing.T, *reconcileEnv) {
		return func(t *testing.T, e *reconcileEnv) {
			t.Helper()
			for _, c := range checks {
				c(t, e)
			}
		}
	}
	refused := &stateclient.StatusError{Method: "UNLOCK", URL: harnessAddress, StatusCode: 400}
	lockCalls := []string{"FetchSummary", "Lock " + webLockID}

	cases := map[string]reconcileCase{
		"naming the holder's ID releases its lock": {
			objects: []client.Object{backend(runHolder.ID), passwordSecret()},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByRun, nil}},
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionFalse, "ForceUnlocked"),
				wantEvents:     []recordedEvent{forceUnlockedEvt},
				wantCalls:      append(lockCalls, "ForceUnlock "+runHolder.ID),
				check:          both(expectLock(nil), expectLastForceUnlock(released)),
			}, {
				name:           "the next probe finds the lock free, and keeps the record",
				before:         func(e *reconcileEnv) { e.clock.Step(DefaultProbeInterval * 11 / 10) },
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionFalse, "NotLocked"),
				wantCalls:      append(lockCalls, "Unlock "+webLockID),
				check:          both(expectLock(nil), expectLastForceUnlock(released)),
			}},
		},
		"naming another ID releases nothing": {
			objects: []client.Object{backend("00000000-0000-4000-8000-000000000000"), passwordSecret()},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByRun}},
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "ForceUnlockSkipped"),
				wantEvents:     []recordedEvent{lockHeldEvent},
				wantCalls:      lockCalls,
				check:          both(expectLock(runHolder), expectLastForceUnlock(nil)),
			}},
		},
		"a server that releases only the empty body gets it right after the conflict named the lock": {
			objects: []client.Object{learnedAs(backend(runHolder.ID).(*backendsv1alpha1.HttpBackend), emptyBodyOnly), passwordSecret()},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByRun}},
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionFalse, "ForceUnlocked"),
				wantEvents:     []recordedEvent{forceUnlockedEvt},
				wantCalls:      append(lockCalls, "ForceUnlockEmptyBody"),
				check:          both(expectLock(nil), expectLastForceUnlock(released)),
			}},
		},
		"a server refusing the UNLOCK": {
			objects: []client.Object{backend(runHolder.ID), passwordSecret()},
			target:  webBackend,
			script:  stateScript{lock: []error{errHeldByRun}, forceUnlock: []error{refused}},
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "ForceUnlockRefused"),
				wantEvents:     []recordedEvent{lockHeldEvent},
				wantCalls:      append(lockCalls, "ForceUnlock "+runHolder.ID),
				check:          both(expectLock(runHolder), expectLastForceUnlock(nil)),
			}},
		},
		"an UNLOCK answered by another holder is not sent again": {
			objects: []client.Object{backend(runHolder.ID), passwordSecret()},
			target:  webBackend,
			script: stateScript{lock: []error{errHeldByRun}, forceUnlock: []error{
				&stateclient.LockError{StatusCode: 409, Info: &stateclient.LockInfo{ID: "another-holder", Who: "bob@laptop"}},
			}},
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: locked(metav1.ConditionTrue, "ServerError"),
				wantEvents:     []recordedEvent{lockHeldEvent},
				wantCalls:      append(lockCalls, "ForceUnlock "+runHolder.ID),
				check:          both(expectLock(runHolder), expectLastForceUnlock(nil)),
			}},
		},
	}
	runReconcileCases(t, cases)
}
