package controllers

// The kinds and steps of the health cases (health_cases_test.go): a
// step sets what one reconciliation learned with the controllers' own
// functions, and ends it as the kind's Reconcile does.

import (
	"errors"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/outputs"
	"github.com/infrastate/backend-operator/internal/statefile"
	"github.com/infrastate/backend-operator/internal/testenv"
)

// healthKind is what the health cases need of a kind: a new object, the
// condition its probe (or lock operation) sets, what a probe that
// succeeded sets it to, and how its Reconcile builds its outcome.
type healthKind struct {
	newObject func() statusObject
	probe     string
	ok        func(obj statusObject) conditions.Observation
	// end is the outcome, and the error, of a reconciliation whose
	// phases set obj's conditions, as the kind's Reconcile builds them.
	end func(obj statusObject) (conditions.Outcome, error)
}

// healthKinds are the kinds of this API.
func healthKinds(t *testing.T) map[string]healthKind {
	t.Helper()
	backend := func(name string) healthKind {
		kind, ok := lookupBackendKind(name)
		if !ok {
			t.Fatalf("no backend kind %s", name)
		}
		return healthKind{
			newObject: func() statusObject { return kind.newObject() },
			probe:     kind.readyGates()[0],
			end: func(statusObject) (conditions.Outcome, error) {
				return conditions.Outcome{ReadyMessage: "Rendered", Gates: kind.readyGates()}, nil
			},
		}
	}
	http, cosb := backend(hb), backend(cb)
	http.ok = func(statusObject) conditions.Observation { return stateObservation(nil, nil) }
	cosb.ok = func(statusObject) conditions.Observation { return bucketObservation("b", nil) }
	return map[string]healthKind{
		hb: http,
		cb: cosb,
		rs: {
			newObject: func() statusObject { return &backendsv1alpha1.RemoteState{} },
			probe:     backendsv1alpha1.OutputsReadyCondition,
			ok: func(obj statusObject) conditions.Observation {
				return publishedObservation(t, obj.(*backendsv1alpha1.RemoteState))
			},
			end: func(statusObject) (conditions.Outcome, error) {
				return conditions.Outcome{ReadyMessage: "Outputs are published", Gates: remoteStateGates}, nil
			},
		},
		sl: {
			newObject: func() statusObject { return &backendsv1alpha1.StateLock{} },
			probe:     backendsv1alpha1.LockedCondition,
			ok: func(obj statusObject) conditions.Observation {
				lock := obj.(*backendsv1alpha1.StateLock)
				applySlockResult(lock, slockResult{action: slockHold, taken: &heldLock{id: "l1"}}, "HttpBackend b", everyKindsFailures)
				return *lockedObservation(lock)
			},
			end: stateLockEnd,
		},
		og: {
			newObject: func() statusObject { return &backendsv1alpha1.OutputGrant{} },
			end: func(obj statusObject) (conditions.Outcome, error) {
				return grantOutcome(obj.(*backendsv1alpha1.OutputGrant), nil, nil), nil
			},
		},
		sh: stateHistoryHealth(),
		sr: stateRestoreHealth(),
	}
}

// granting is an OutputGrant's reconciliation whose grant names to, by a
// manager that watches the namespaces watched (all when empty) and reads
// namespace labels with labelsErr.
func granting(watched []string, labelsErr error, to ...backendsv1alpha1.GrantConsumer) healthStep {
	return func(_ *testing.T, _ string, _ healthKind, obj statusObject) (conditions.Outcome, error) {
		grant := obj.(*backendsv1alpha1.OutputGrant)
		grant.Spec.To = to
		return grantOutcome(grant, watched, labelsErr), nil
	}
}

// withKind adds step for kind to steps.
func withKind(steps map[string]healthStep, kind string, step healthStep) map[string]healthStep {
	steps[kind] = step
	return steps
}

// withKinds adds step for each of kinds to steps.
func withKinds(steps map[string]healthStep, step healthStep, kinds ...string) map[string]healthStep {
	for _, kind := range kinds {
		steps[kind] = step
	}
	return steps
}

// stateLockEnd is how a StateLock's Reconcile ends, with reconcileLock's
// last step: Ready from stateLockOutcome, Reconciling while another holds
// the lock, and a stall once the lock is lost or not released (lockStall).
func stateLockEnd(obj statusObject) (conditions.Outcome, error) {
	lock := obj.(*backendsv1alpha1.StateLock)
	locked := meta.FindStatusCondition(lock.Status.Conditions, backendsv1alpha1.LockedCondition)
	out := stateLockOutcome(locked)
	if locked != nil && locked.Reason == backendsv1alpha1.WaitingForLockReason {
		out.Waiting = &conditions.Observation{Status: metav1.ConditionTrue, Reason: locked.Reason, Message: locked.Message}
	}
	return out, lockStall(lock)
}

// lockedObservation is a StateLock's Locked condition as an observation.
func lockedObservation(lock *backendsv1alpha1.StateLock) *conditions.Observation {
	c := meta.FindStatusCondition(lock.Status.Conditions, backendsv1alpha1.LockedCondition)
	if c == nil {
		return nil
	}
	return &conditions.Observation{Status: c.Status, Reason: c.Reason, Message: c.Message}
}

// publishedObservation is the OutputsReady condition of a RemoteState whose outputs
// were published, from publish itself.
func publishedObservation(t *testing.T, remote *backendsv1alpha1.RemoteState) conditions.Observation {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).Build()
	r := newRemoteStateReconciler(c, c, nil)
	obs, err := r.publish(t.Context(), remote, remoteRead{found: true, summary: statefile.Summary{Serial: 3, Lineage: "l"},
		values: []outputs.Value{{Name: "vpc_id", Key: "VPC_ID", Type: "string", Data: []byte("vpc-1")}}}, httpFailures)
	if err != nil {
		t.Fatalf("publishing the outputs: %v", err)
	}
	return obs
}

// healthStep sets what one reconciliation of an object of kind learned,
// with the controllers' own functions, and returns how it ended.
type healthStep func(t *testing.T, kind string, k healthKind, obj statusObject) (conditions.Outcome, error)

// observed is a reconciliation whose probe set the kind's probe condition
// to obs.
func observed(obs conditions.Observation) healthStep {
	return func(_ *testing.T, _ string, k healthKind, obj statusObject) (conditions.Outcome, error) {
		conditions.Set(obj.StatusConditions(), obj.GetGeneration(), k.probe, obs)
		return k.end(obj)
	}
}

// probeSucceeded is a reconciliation whose probe succeeded.
func probeSucceeded() healthStep {
	return func(_ *testing.T, _ string, k healthKind, obj statusObject) (conditions.Outcome, error) {
		conditions.Set(obj.StatusConditions(), obj.GetGeneration(), k.probe, k.ok(obj))
		return k.end(obj)
	}
}

// lockRead is a backend's probe that reached the state and read its lock
// as v says.
func lockRead(v lockVerdict) healthStep {
	return func(_ *testing.T, _ string, k healthKind, obj statusObject) (conditions.Outcome, error) {
		conditions.Set(obj.StatusConditions(), obj.GetGeneration(), k.probe, k.ok(obj))
		conditions.Set(obj.StatusConditions(), obj.GetGeneration(), backendsv1alpha1.LockedCondition, v.obs)
		return k.end(obj)
	}
}

// cosProbed is a CosBackend's probe that learned res.
func cosProbed(res cosProbeResult) healthStep {
	return func(_ *testing.T, _ string, k healthKind, obj statusObject) (conditions.Outcome, error) {
		applyCosProbe(newOperatorMetrics(clock.RealClock{}), obj.(*backendsv1alpha1.CosBackend), res, time.Now())
		return k.end(obj)
	}
}

// stateLockDid is a StateLock's lock operation that learned res, on a
// StateLock that recorded holding lockID ("" for none) and that expires
// at until (nil for never).
func stateLockDid(lockID string, until *metav1.Time, res slockResult) healthStep {
	return func(_ *testing.T, _ string, k healthKind, obj statusObject) (conditions.Outcome, error) {
		lock := obj.(*backendsv1alpha1.StateLock)
		lock.Status.LockID, lock.Spec.Until = lockID, until
		applySlockResult(lock, res, "HttpBackend b", everyKindsFailures)
		return k.end(obj)
	}
}

// stalled is a reconciliation whose phases stalled with reason.
func stalled(reason string) healthStep {
	return func(_ *testing.T, _ string, k healthKind, obj statusObject) (conditions.Outcome, error) {
		out, _ := k.end(obj)
		return out, conditions.Stall(reason, "The user must act")
	}
}

// erred is a reconciliation whose phases ended on a transient error.
func erred() healthStep {
	return func(_ *testing.T, _ string, k healthKind, obj statusObject) (conditions.Outcome, error) {
		out, _ := k.end(obj)
		return out, errors.New("connection reset by the API server")
	}
}

// probing is a reconciliation that submitted the first probe of the
// generation, which is under way.
func probing() healthStep {
	return func(_ *testing.T, _ string, k healthKind, obj statusObject) (conditions.Outcome, error) {
		out, err := k.end(obj)
		out.ProbePending = true
		return out, err
	}
}

// forKinds gives step to each of kinds.
func forKinds(step healthStep, kinds ...string) map[string]healthStep {
	steps := make(map[string]healthStep, len(kinds))
	for _, k := range kinds {
		steps[k] = step
	}
	return steps
}
