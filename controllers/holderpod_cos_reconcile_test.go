package controllers

import (
	"context"
	"crypto/md5" // the COS lock ID is the MD5 of the .tflock object
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos/costest"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

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
		return newNetBackend(func(b *builders.CosBackendWrapper) {
			policy := releaseGone
			policy.StaleAfter = &metav1.Duration{Duration: time.Hour}
			b.ProbeInterval(every).LockPolicy(policy)
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
					expectMessageSaying(netBackend, "Locked", "its Pod runner-7 had been Failed since")),
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
			objects:   []client.Object{backend(), cosCredentials(harnessNamespace), runner(corev1.PodRunning)},
			cos:       func(s *costest.Server) { podLocked(s); race.server = s },
			intercept: race.funcs(),
			target:    netBackend,
			steps: []reconcileStep{{
				do:         reconcileUntilProbed,
				wantEvents: []recordedEvent{netHeld},
				check:      expectHolderPod(netBackend, seenPod("Running", time.Time{})),
			}, {
				before: then(setPodPhase(corev1.PodSucceeded), step(policyEvery*11/10)),
				do:     reconcileUntilProbed,
				check:  expectHolderPod(netBackend, seenPod("Succeeded", harnessEpoch.Add(policyEvery*11/10).Truncate(time.Second))),
			}, {
				name: "another takes the lock as the probe reads the pod: after its read of the lock, before its release",
				before: func(e *reconcileEnv) {
					e.clock.Step(policyGrace)
					race.arm([]byte(otherLock))
				},
				do:             reconcileUntilProbed,
				wantConditions: bucketReady(wantCond("Locked", metav1.ConditionTrue, "ServerError")),
				check: allChecks(expectLockObject(otherLock), expectReleased(netBackend, nil),
					expectMessageSaying(netBackend, "Locked", "the lock is not held", "the lock held is "+md5Hex(otherLock))),
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
