package controllers

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/history"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/statefile"
)

func TestChooseSnapshot(t *testing.T) {
	const other = "9f1c2d3e-4a5b-4c6d-8e7f-001122334455"
	otherSnap := func(serial uint64, minutes int) history.Snapshot {
		s := snap(serial, minutes)
		s.Ref = history.NewRef(other, serial, s.SHA256)
		return s
	}
	rewritten := snap(3, 9)
	rewritten.SHA256 = strings.Repeat("f", 64)
	current := statefile.Summary{Serial: 6, Lineage: testLineage}
	tests := []struct {
		name    string
		kept    []history.Snapshot
		serial  uint64
		lineage string
		current statefile.Summary
		found   bool
		want    history.Ref
		wantErr error
	}{
		{"the serial of the current lineage", []history.Snapshot{snap(2, 0), snap(3, 1), otherSnap(3, 2)}, 3, "", current, true, snap(3, 1).Ref, nil},
		{"a pruned serial is not found", []history.Snapshot{snap(4, 0), snap(5, 1)}, 3, "", current, true, history.Ref{}, history.ErrSnapshotNotFound},
		{"the only lineage with the serial, another than the source's", []history.Snapshot{otherSnap(3, 2)}, 3, "", current, true, otherSnap(3, 2).Ref, nil},
		{"several other lineages need spec.lineage", []history.Snapshot{otherSnap(3, 2), snap(3, 1)}, 3, "", statefile.Summary{Lineage: "third"}, true, history.Ref{}, errAmbiguousLineage},
		{"spec.lineage chooses", []history.Snapshot{otherSnap(3, 2), snap(3, 1)}, 3, other, current, true, otherSnap(3, 2).Ref, nil},
		{"spec.lineage with no such snapshot", []history.Snapshot{snap(3, 1)}, 3, other, current, true, history.Ref{}, history.ErrSnapshotNotFound},
		{"a source with no state", []history.Snapshot{snap(3, 1)}, 3, "", statefile.Summary{}, false, snap(3, 1).Ref, nil},
		{"of one serial written twice, the newest", []history.Snapshot{snap(3, 1), rewritten}, 3, "", current, true, rewritten.Ref, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chooseSnapshot(tt.kept, tt.serial, tt.lineage, tt.current, tt.found)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("chosen (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplyRestoreRun(t *testing.T) {
	spec := backendsv1alpha1.StateRestoreSpec{HistoryRef: backendsv1alpha1.LocalObjectReference{Name: "network"}, Serial: 3}
	holder := &backendsv1alpha1.LockInfo{ID: "run-9", Who: "ci@runner", Operation: "OperationTypeApply"}
	written := history.Restored{Previous: statefile.Summary{Serial: 5, Lineage: testLineage}, Found: true, Written: 6, Snapshot: snap(3, 0).Ref}
	tests := []struct {
		name         string
		run          restoreRun
		wantStatus   metav1.ConditionStatus
		wantReason   string
		wantFinished bool
		wantWritten  int64
		wantHolder   *backendsv1alpha1.LockInfo
		wantInMsg    string
	}{
		{"written", restoreRun{restored: written, lockID: "l"}, metav1.ConditionTrue, backendsv1alpha1.RestoredReason, true, 6, nil, "back as serial 6, above the source's serial 5"},
		{"waiting names the holder", restoreRun{waiting: true, holder: holder}, metav1.ConditionFalse, backendsv1alpha1.WaitingForLockReason, false, 0, holder, "ci@runner"},
		{"waiting for an unnamed holder", restoreRun{waiting: true}, metav1.ConditionFalse, backendsv1alpha1.WaitingForLockReason, false, 0, nil, "never forces"},
		{"pruned", restoreRun{err: history.ErrSnapshotNotFound}, metav1.ConditionFalse, backendsv1alpha1.SnapshotNotFoundReason, true, 0, nil, "spec.retain"},
		{"lineage mismatch", restoreRun{err: history.ErrLineageMismatch, restored: history.Restored{Found: true, Previous: statefile.Summary{Lineage: "x"}, Snapshot: snap(3, 0).Ref}},
			metav1.ConditionFalse, backendsv1alpha1.LineageMismatchReason, true, 0, nil, "allowLineageChange"},
		{"encrypted", restoreRun{err: history.ErrEncryptedSnapshot}, metav1.ConditionFalse, backendsv1alpha1.StateEncryptedReason, true, 0, nil, "tofu state push"},
		{"destination unreachable is retried", restoreRun{err: &history.StageError{Stage: history.StageDestination, Err: errors.New("timeout")}},
			metav1.ConditionFalse, backendsv1alpha1.DestinationRefusedReason, false, 0, nil, "timeout"},
		{"a source that refuses the credentials reads as its backend's probe does",
			restoreRun{err: &history.StageError{Stage: history.StageSource, Err: fmt.Errorf("taking the lock: %w", &stateclient.StatusError{StatusCode: 401})}},
			metav1.ConditionFalse, backendsv1alpha1.UnauthorizedReason, false, 0, nil, "tries again"},
		{"a lock left is said", restoreRun{restored: written, lockID: "l-1", unreleased: "the server answered 500"}, metav1.ConditionTrue, backendsv1alpha1.RestoredReason, true, 6, nil, "force-unlock l-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var status backendsv1alpha1.StateRestoreStatus
			obs := applyRestoreRun(&status, tt.run, "network", "p", spec, httpFailures, t0)
			if obs.Status != tt.wantStatus || obs.Reason != tt.wantReason || !strings.Contains(obs.Message, tt.wantInMsg) {
				t.Errorf("observation = %s %s %q, want %s %s containing %q", obs.Status, obs.Reason, obs.Message, tt.wantStatus, tt.wantReason, tt.wantInMsg)
			}
			c := &metav1.Condition{Status: obs.Status, Reason: obs.Reason}
			if restoreFinished(c) != tt.wantFinished {
				t.Errorf("restoreFinished = %t, want %t", !tt.wantFinished, tt.wantFinished)
			}
			if status.WrittenSerial != tt.wantWritten || !cmp.Equal(status.Holder, tt.wantHolder) {
				t.Errorf("status = %+v, want writtenSerial %d and holder %v", status, tt.wantWritten, tt.wantHolder)
			}
			if tt.wantWritten != 0 && (status.RestoredFrom == nil || status.RestoredFrom.Serial != 3 || status.CompletionTime == nil) {
				t.Errorf("status.restoredFrom = %+v, completionTime %v: want serial 3 and a time", status.RestoredFrom, status.CompletionTime)
			}
		})
	}
}
