package controllers

// The StateHistory and StateRestore kinds of the health cases
// (health_unit_test.go), their own cases, and their steps: what a
// history's read or a restore's run learned, set with the controllers'
// own functions.

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/history"
	"github.com/infrastate/backend-operator/internal/statefile"
	"github.com/infrastate/backend-operator/internal/testenv"
)

// historyHealthCases are the cases of the reasons only StateHistories and
// StateRestores set; the cases they share with the other kinds are in
// healthCases. holder holds a lock; cosErr wraps an error as a COS
// request's.
func historyHealthCases(holder *backendsv1alpha1.LockInfo, cosErr func(error) error) map[string]healthCase {
	return map[string]healthCase{
		// Ready.
		"the history keeps the newest state it read": {
			reason: backendsv1alpha1.SnapshotStoredReason, in: "probe", steps: forKinds(probeSucceeded(), sh), want: readsCurrent,
		},
		"the history reads a state it keeps already": {
			reason: backendsv1alpha1.SnapshotStoredReason, in: "probe",
			steps: forKinds(historyDid(historyRead{taken: history.Taken{Found: true, Current: snap(1, 9), Lineage: testLineage, Kept: []history.Snapshot{snap(1, 0)}}}), sh),
			want:  readsCurrent,
		},
		// A restore that is done is Ready with its own reason, for good.
		"the restore wrote its snapshot": {
			reason: backendsv1alpha1.RestoredReason, steps: forKinds(probeSucceeded(), sr), want: readsCurrent,
		},

		// Stalls: the user must fix the spec or a referenced object.
		// Their retentions would prune each other's snapshots; a restore
		// would read snapshots of both.
		"another history writes to the destination's bucket and prefix": {
			reason: backendsv1alpha1.PrefixInUseReason, steps: forKinds(prefixTaken(), sh, sr), want: readsFailed,
		},
		"the history a restore names does not exist": {
			reason: backendsv1alpha1.HistoryNotFoundReason, steps: forKinds(historyMissing(), sr), want: readsFailed,
		},

		// A read or a run failed: retried at the next interval.
		"the history's source holds no state yet": {
			reason: backendsv1alpha1.StateNotFoundReason, steps: forKinds(historyDid(historyRead{}), sh), want: readsRetrying,
		},
		// The history's destination, read or written again at the next
		// interval (a restore's, at its next try).
		"the destination does not answer": {
			reason: backendsv1alpha1.DestinationUnreachableReason, in: "probe", steps: forKinds(destinationFailed(cosErr(cos.ErrUnreachable)), sh, sr), want: readsRetrying,
		},
		"the destination's request timed out": {
			reason: backendsv1alpha1.DestinationUnreachableReason, in: "probe", steps: forKinds(destinationFailed(context.DeadlineExceeded), sh, sr), want: readsRetrying,
		},
		"the destination refuses the credentials": {
			reason: backendsv1alpha1.DestinationRefusedReason, in: "probe", steps: forKinds(destinationFailed(cosErr(cos.ErrAccessDenied)), sh, sr), want: readsRetrying,
		},
		"the destination's bucket does not exist": {
			reason: backendsv1alpha1.DestinationRefusedReason, in: "probe", steps: forKinds(destinationFailed(cosErr(cos.ErrBucketNotFound)), sh, sr), want: readsRetrying,
		},
		"the destination's bucket is full": {
			reason: backendsv1alpha1.DestinationFullReason, in: "probe", steps: forKinds(destinationFailed(cosErr(cos.ErrStoreFull)), sh), want: readsRetrying,
		},
		"the destination's prefix holds more objects than a history lists": {
			reason: backendsv1alpha1.DestinationFullReason, in: "probe", steps: forKinds(destinationFailed(cosErr(history.ErrCrowded)), sh, sr), want: readsRetrying,
		},

		// A StateRestore's run: it waits for the lock as a StateLock
		// does, and a refusal is final (stateRestoreEnd stalls it).
		"another holds the lock the restore waits for": {
			reason: backendsv1alpha1.WaitingForLockReason, steps: forKinds(restoreDid(restoreRun{waiting: true, holder: holder}), sr), want: readsProgressing,
		},
		"a server that names no holder holds the lock the restore waits for": {
			reason: backendsv1alpha1.WaitingForLockReason, steps: forKinds(restoreDid(restoreRun{waiting: true}), sr), want: readsProgressing,
		},
		"the restore waits for its backend to learn its server's locks": {
			reason: backendsv1alpha1.WaitingForLockReason, steps: forKinds(restoreWaited("HttpBackend b learns its server"), sr), want: readsProgressing,
		},
		"the snapshot a restore names was never kept, or was pruned": {
			reason: backendsv1alpha1.SnapshotNotFoundReason, steps: forKinds(restoreDid(restoreRun{err: history.ErrSnapshotNotFound, lockID: "l1"}), sr), want: readsFailed,
		},
		"the snapshot a restore names cannot be written forward": {
			reason: backendsv1alpha1.SnapshotUnusableReason,
			steps:  forKinds(restoreDid(restoreRun{err: &history.StageError{Stage: history.StageContent, Err: history.ErrNoSerial}, lockID: "l1"}), sr),
			want:   readsFailed,
		},
		"the snapshot a restore names changed in the destination": {
			reason: backendsv1alpha1.SnapshotNotFoundReason, steps: forKinds(restoreDid(restoreRun{err: history.ErrSnapshotChanged, lockID: "l1"}), sr), want: readsFailed,
		},
		"the snapshot a restore names is of another lineage than the source's": {
			reason: backendsv1alpha1.LineageMismatchReason,
			steps: forKinds(restoreDid(restoreRun{err: history.ErrLineageMismatch, lockID: "l1",
				restored: history.Restored{Found: true, Previous: statefile.Summary{Serial: 5, Lineage: "another"}, Snapshot: snap(3, 0).Ref}}), sr),
			want: readsFailed,
		},
		"the snapshot a restore names is encrypted": {
			reason: backendsv1alpha1.StateEncryptedReason, steps: forKinds(restoreDid(restoreRun{err: history.ErrEncryptedSnapshot, lockID: "l1"}), sr), want: readsFailed,
		},
		"snapshots of several lineages have the serial a restore names": {
			reason: backendsv1alpha1.InvalidSpecReason, steps: forKinds(restoreDid(restoreRun{err: errAmbiguousLineage, lockID: "l1"}), sr), want: readsFailed,
		},
	}
}

// stateHistoryHealth is the StateHistory kind of the health cases.
func stateHistoryHealth() healthKind {
	return healthKind{
		newObject: func() statusObject {
			return &backendsv1alpha1.StateHistory{Spec: backendsv1alpha1.StateHistorySpec{
				BackendRef:  backendsv1alpha1.BackendReference{Kind: hb, Name: "b"},
				Destination: backendsv1alpha1.HistoryDestination{CosBackendRef: backendsv1alpha1.LocalObjectReference{Name: "backups"}},
			}}
		},
		probe: backendsv1alpha1.SnapshotsReadyCondition,
		ok: func(obj statusObject) conditions.Observation {
			return readHistory(obj.(*backendsv1alpha1.StateHistory), historyRead{taken: history.Taken{Found: true, Current: snap(2, 5), Lineage: testLineage,
				Stored: true, Kept: history.Newest([]history.Snapshot{snap(1, 0), snap(2, 5)})}})
		},
		// As stateHistoryReconciler.Reconcile builds it.
		end: func(obj statusObject) (conditions.Outcome, error) {
			h := obj.(*backendsv1alpha1.StateHistory)
			return conditions.Outcome{ReadyMessage: readyHistoryMessage(h), Gates: stateHistoryGates}, nil
		},
	}
}

// stateRestoreHealth is the StateRestore kind of the health cases.
func stateRestoreHealth() healthKind {
	return healthKind{
		newObject: func() statusObject {
			return &backendsv1alpha1.StateRestore{Spec: backendsv1alpha1.StateRestoreSpec{
				HistoryRef: backendsv1alpha1.LocalObjectReference{Name: "network"}, Serial: 3,
			}}
		},
		probe: backendsv1alpha1.RestoredCondition,
		ok: func(obj statusObject) conditions.Observation {
			return runRestoreOnce(obj.(*backendsv1alpha1.StateRestore), restoreRun{restored: writtenRestore(), lockID: "l1"})
		},
		// As stateRestoreReconciler.Reconcile ends once its phases ran.
		end: func(obj statusObject) (conditions.Outcome, error) {
			return stateRestoreEnd(obj.(*backendsv1alpha1.StateRestore), nil)
		},
	}
}

// readHistory writes read into h's status as reconcileSnapshots does,
// with h's status.destinationPrefix as Reconcile sets it, and returns the
// SnapshotsReady observation.
func readHistory(h *backendsv1alpha1.StateHistory, read historyRead) conditions.Observation {
	h.Status.DestinationPrefix = historyPrefix(h)
	return applyHistoryRead(&h.Status, read, h.Spec.BackendRef, everyKindsFailures)
}

// historyDid is a StateHistory's read that did read.
func historyDid(read historyRead) healthStep {
	return func(_ *testing.T, _ string, k healthKind, obj statusObject) (conditions.Outcome, error) {
		conditions.Set(obj.StatusConditions(), obj.GetGeneration(), k.probe, readHistory(obj.(*backendsv1alpha1.StateHistory), read))
		return k.end(obj)
	}
}

// sourceFailed is a StateHistory's read, or a StateRestore's run, whose
// read or write of the source failed with err.
func sourceFailed(err error) healthStep {
	stageErr := &history.StageError{Stage: history.StageSource, Err: err}
	return func(t *testing.T, kind string, k healthKind, obj statusObject) (conditions.Outcome, error) {
		t.Helper()
		switch kind {
		case sh:
			return historyDid(historyRead{err: stageErr})(t, kind, k, obj)
		case sr:
			return restoreDid(restoreRun{err: stageErr, lockID: "l1"})(t, kind, k, obj)
		}
		t.Fatalf("%s reads no source", kind)
		return conditions.Outcome{}, nil
	}
}

// destinationFailed is a StateHistory's read, or a StateRestore's run,
// that the history's destination failed with err.
func destinationFailed(err error) healthStep {
	stageErr := &history.StageError{Stage: history.StageDestination, Err: err}
	return func(t *testing.T, kind string, k healthKind, obj statusObject) (conditions.Outcome, error) {
		t.Helper()
		switch kind {
		case sh:
			return historyDid(historyRead{taken: history.Taken{Found: true, Current: snap(3, 5), Lineage: testLineage}, err: stageErr})(t, kind, k, obj)
		case sr:
			return restoreDid(restoreRun{err: stageErr, lockID: "l1"})(t, kind, k, obj)
		}
		t.Fatalf("%s has no destination", kind)
		return conditions.Outcome{}, nil
	}
}

// restorePrefix is the prefix of the history the health cases' restores
// name.
const restorePrefix = "state-history/health/network"

// writtenRestore is what a restore that wrote serial 3 back as serial 6
// did.
func writtenRestore() history.Restored {
	return history.Restored{Previous: statefile.Summary{Serial: 5, Lineage: testLineage}, Found: true, Written: 6, Snapshot: snap(3, 0).Ref}
}

// runRestoreOnce writes run into sr's status as reconcileRestore does and
// returns the Restored observation.
func runRestoreOnce(sr *backendsv1alpha1.StateRestore, run restoreRun) conditions.Observation {
	return applyRestoreRun(&sr.Status, run, sr.Spec.HistoryRef.Name, restorePrefix, sr.Spec, everyKindsFailures, time.Now())
}

// restoreDid is a StateRestore's run that did run, ended as its
// Reconcile ends it (stateRestoreEnd).
func restoreDid(run restoreRun) healthStep {
	return func(_ *testing.T, _ string, k healthKind, obj statusObject) (conditions.Outcome, error) {
		conditions.Set(obj.StatusConditions(), obj.GetGeneration(), k.probe, runRestoreOnce(obj.(*backendsv1alpha1.StateRestore), run))
		return k.end(obj)
	}
}

// restoreWaited is a StateRestore's reconciliation that ran nothing: its
// source's backend must learn its server first (reconcileRestoreTargets'
// waiting, from the backend's lockWaiting).
func restoreWaited(why string) healthStep {
	return func(_ *testing.T, _ string, _ healthKind, obj statusObject) (conditions.Outcome, error) {
		waiting := conditions.Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.WaitingForLockReason, Message: "Waiting: " + why}
		return stateRestoreEnd(obj.(*backendsv1alpha1.StateRestore), &waiting)
	}
}

// historyMissing is a StateRestore's reconciliation whose history does
// not exist (reconcileRestoreHistory).
func historyMissing() healthStep {
	return func(t *testing.T, _ string, k healthKind, obj statusObject) (conditions.Outcome, error) {
		t.Helper()
		c := indexedClient()
		err := newStateRestoreReconciler(c, c, nil).reconcileRestoreHistory(t.Context(), &restoreScope{sr: obj.(*backendsv1alpha1.StateRestore)})
		out, _ := k.end(obj)
		return out, err
	}
}

// prefixTaken is the reconciliation of a StateHistory, or of a
// StateRestore of one, whose destination's bucket and prefix an older
// history writes to (reconcileHistoryDestination, which a restore runs
// too).
func prefixTaken() healthStep {
	return func(t *testing.T, kind string, k healthKind, obj statusObject) (conditions.Outcome, error) {
		t.Helper()
		now := time.Now()
		dest := &backendsv1alpha1.CosBackend{ObjectMeta: metav1.ObjectMeta{Name: "backups", Namespace: "health"}, Spec: backendsv1alpha1.CosBackendSpec{Bucket: "b"}}
		historyNamed := func(name string, created time.Time) *backendsv1alpha1.StateHistory {
			return &backendsv1alpha1.StateHistory{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "health", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created)},
				Spec: backendsv1alpha1.StateHistorySpec{BackendRef: backendsv1alpha1.BackendReference{Kind: hb, Name: "b"},
					Destination: backendsv1alpha1.HistoryDestination{CosBackendRef: backendsv1alpha1.LocalObjectReference{Name: dest.Name}, Prefix: "shared"}},
			}
		}
		c := indexedClient(dest, historyNamed("older", now.Add(-time.Hour)))
		var err error
		switch kind {
		case sh:
			h := obj.(*backendsv1alpha1.StateHistory)
			h.UID, h.CreationTimestamp, h.Spec.Destination.Prefix = "uid-a", metav1.NewTime(now), "shared"
			err = newStateHistoryReconciler(c, c, nil).reconcileHistoryDestination(t.Context(), &historyScope{h: h})
		case sr:
			s := &restoreScope{sr: obj.(*backendsv1alpha1.StateRestore), h: historyNamed("network", now)}
			err = newStateRestoreReconciler(c, c, nil).reconcileRestoreTargets(t.Context(), s)
		default:
			t.Fatalf("%s has no destination", kind)
		}
		out, _ := k.end(obj)
		return out, err
	}
}

// indexedClient is a fake API server holding objects, with the production
// field indexes.
func indexedClient(objects ...client.Object) client.Client {
	builder := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(objects...)
	for _, ix := range fieldIndexes() {
		builder = builder.WithIndex(ix.obj, ix.field, ix.extract)
	}
	return builder.Build()
}
