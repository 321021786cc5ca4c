package controllers

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/history"
)

const testLineage = "0b6e4c2a-5f7d-4c3e-9a1b-2d8f6e4c2a10"

// snap is a snapshot of testLineage and serial, taken minutes after t0.
func snap(serial uint64, minutes int) history.Snapshot {
	return history.Snapshot{Ref: history.NewRef(testLineage, serial, fmt.Sprintf("%064x", serial)), TakenAt: t0.Add(time.Duration(minutes) * time.Minute), Size: 100}
}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func TestApplyHistoryRead(t *testing.T) {
	source := backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.HttpBackendKind, Name: "network"}
	holder := &backendsv1alpha1.LockInfo{ID: "run-7", Who: "ci@runner"}
	statusOf := func(snapshots ...history.Snapshot) backendsv1alpha1.StateHistoryStatus {
		st := backendsv1alpha1.StateHistoryStatus{DestinationPrefix: "p"}
		for _, s := range history.Newest(snapshots) {
			st.Snapshots = append(st.Snapshots, backendsv1alpha1.StateSnapshot{Serial: int64(s.Serial), Lineage: s.Lineage, SizeBytes: s.Size, SHA256: s.SHA256,
				Key: history.Key("p", s.Ref), TakenAt: metav1.NewTime(s.TakenAt)})
		}
		st.SnapshotCount = int32(len(snapshots))
		return st
	}
	tests := []struct {
		name        string
		before      backendsv1alpha1.StateHistoryStatus
		read        historyRead
		wantReason  string
		wantStatus  metav1.ConditionStatus
		wantSerials []int64 // status.snapshots' serials
		wantSkipped []int64
		wantHolder  *backendsv1alpha1.LockInfo // of the newest
	}{{
		name:        "a new serial is stored with the holder seen",
		before:      statusOf(snap(1, 0)),
		read:        historyRead{taken: history.Taken{Found: true, Current: snap(2, 5), Lineage: testLineage, Stored: true, Kept: history.Newest([]history.Snapshot{snap(1, 0), snap(2, 5)})}, holder: holder},
		wantReason:  backendsv1alpha1.SnapshotStoredReason,
		wantStatus:  metav1.ConditionTrue,
		wantSerials: []int64{2, 1},
		wantHolder:  holder,
	}, {
		name:        "serials that came and went between two reads are reported skipped",
		before:      statusOf(snap(1, 0)),
		read:        historyRead{taken: history.Taken{Found: true, Current: snap(4, 5), Lineage: testLineage, Stored: true, Kept: history.Newest([]history.Snapshot{snap(1, 0), snap(4, 5)})}},
		wantReason:  backendsv1alpha1.SnapshotStoredReason,
		wantStatus:  metav1.ConditionTrue,
		wantSerials: []int64{4, 1},
		wantSkipped: []int64{2, 3},
	}, {
		name:        "a serial kept already (another manager, a restart) is not skipped",
		before:      statusOf(snap(1, 0)),
		read:        historyRead{taken: history.Taken{Found: true, Current: snap(3, 5), Lineage: testLineage, Stored: true, Kept: history.Newest([]history.Snapshot{snap(1, 0), snap(2, 1), snap(3, 5)})}},
		wantReason:  backendsv1alpha1.SnapshotStoredReason,
		wantStatus:  metav1.ConditionTrue,
		wantSerials: []int64{3, 2, 1},
	}, {
		name:        "the same state again stores nothing and skips nothing",
		before:      statusOf(snap(1, 0)),
		read:        historyRead{taken: history.Taken{Found: true, Current: snap(1, 9), Lineage: testLineage, Kept: []history.Snapshot{snap(1, 0)}}},
		wantReason:  backendsv1alpha1.SnapshotStoredReason,
		wantStatus:  metav1.ConditionTrue,
		wantSerials: []int64{1},
	}, {
		name:       "no state yet",
		read:       historyRead{},
		wantReason: backendsv1alpha1.StateNotFoundReason,
		wantStatus: metav1.ConditionFalse,
	}, {
		name:        "a destination that refuses keeps the snapshots listed before",
		before:      statusOf(snap(1, 0), snap(2, 1)),
		read:        historyRead{taken: history.Taken{Found: true, Current: snap(3, 5)}, err: &history.StageError{Stage: history.StageDestination, Err: cos.ErrAccessDenied}},
		wantReason:  backendsv1alpha1.DestinationRefusedReason,
		wantStatus:  metav1.ConditionFalse,
		wantSerials: []int64{2, 1},
	}, {
		name:        "a failed prune lists what is still there",
		before:      statusOf(snap(1, 0)),
		read:        historyRead{taken: history.Taken{Found: true, Current: snap(2, 5), Stored: true, Kept: history.Newest([]history.Snapshot{snap(1, 0), snap(2, 5)})}, err: &history.StageError{Stage: history.StageDestination, Err: cos.ErrUnreachable}},
		wantReason:  backendsv1alpha1.DestinationUnreachableReason,
		wantStatus:  metav1.ConditionFalse,
		wantSerials: []int64{2, 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := tt.before
			obs := applyHistoryRead(&status, tt.read, source, nil)
			if obs.Reason != tt.wantReason || obs.Status != tt.wantStatus {
				t.Errorf("observation = %s %s (%s), want %s %s", obs.Status, obs.Reason, obs.Message, tt.wantStatus, tt.wantReason)
			}
			var serials []int64
			for _, s := range status.Snapshots {
				serials = append(serials, s.Serial)
			}
			if diff := cmp.Diff(tt.wantSerials, serials); diff != "" {
				t.Errorf("status.snapshots serials (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSkipped, status.SkippedSerials); diff != "" {
				t.Errorf("status.skippedSerials (-want +got):\n%s", diff)
			}
			if tt.wantHolder != nil && (len(status.Snapshots) == 0 || !cmp.Equal(status.Snapshots[0].Holder, tt.wantHolder)) {
				t.Errorf("the newest snapshot's holder is not %v: %+v", tt.wantHolder, status.Snapshots)
			}
		})
	}
}

func TestApplyHistoryReadKeepsHoldersOfOlderSnapshots(t *testing.T) {
	holder := &backendsv1alpha1.LockInfo{ID: "run-1", Who: "ci"}
	status := backendsv1alpha1.StateHistoryStatus{DestinationPrefix: "p"}
	source := backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.HttpBackendKind, Name: "network"}
	applyHistoryRead(&status, historyRead{taken: history.Taken{Found: true, Current: snap(1, 0), Stored: true, Kept: []history.Snapshot{snap(1, 0)}}, holder: holder}, source, nil)
	applyHistoryRead(&status, historyRead{taken: history.Taken{Found: true, Current: snap(2, 1), Stored: true, Kept: history.Newest([]history.Snapshot{snap(1, 0), snap(2, 1)})}}, source, nil)
	if status.Snapshots[0].Holder != nil || !cmp.Equal(status.Snapshots[1].Holder, holder) {
		t.Errorf("holders = %v, %v; want none for serial 2 and %v for serial 1", status.Snapshots[0].Holder, status.Snapshots[1].Holder, holder)
	}
}

func TestSkippedSerialsAreBounded(t *testing.T) {
	var skipped []int64
	for i := range 10 {
		from := uint64(i * 50)
		taken := history.Taken{Found: true, Current: snap(from+50, i), Kept: []history.Snapshot{snap(from+50, i)}}
		skipped = skippedSerials(skipped, backendsv1alpha1.StateSnapshot{Serial: int64(from), Lineage: history.LineageSegment(testLineage)}, taken)
	}
	if len(skipped) != maxSkippedSerials || skipped[len(skipped)-1] != 499 {
		t.Errorf("skipped has %d serials ending %d, want the newest %d ending 499", len(skipped), skipped[len(skipped)-1], maxSkippedSerials)
	}
}

func TestDestinationFailure(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("listing: %w", history.ErrCrowded), backendsv1alpha1.DestinationFullReason},
		{fmt.Errorf("put: %w", cos.ErrStoreFull), backendsv1alpha1.DestinationFullReason},
		{fmt.Errorf("put: %w", cos.ErrUnreachable), backendsv1alpha1.DestinationUnreachableReason},
		{fmt.Errorf("put: %w", cos.ErrAccessDenied), backendsv1alpha1.DestinationRefusedReason},
		{fmt.Errorf("list: %w", cos.ErrBucketNotFound), backendsv1alpha1.DestinationRefusedReason},
		{errors.New("something else"), backendsv1alpha1.DestinationRefusedReason},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			obs := destinationFailure(tt.err)
			if obs.Reason != tt.want || obs.Status != metav1.ConditionFalse || !strings.Contains(obs.Message, tt.err.Error()) {
				t.Errorf("destinationFailure(%v) = %+v, want %s naming the error", tt.err, obs, tt.want)
			}
		})
	}
}

func TestHistoryRetention(t *testing.T) {
	count := func(n int32) *int32 { return &n }
	day := &metav1.Duration{Duration: 24 * time.Hour}
	tests := []struct {
		name string
		spec *backendsv1alpha1.HistoryRetention
		want history.Retention
	}{
		{"unset keeps the default count", nil, history.Retention{Count: defaultRetainCount}},
		{"a count", &backendsv1alpha1.HistoryRetention{Count: count(3)}, history.Retention{Count: 3}},
		{"an age alone is bounded by the most a history lists", &backendsv1alpha1.HistoryRetention{MaxAge: day}, history.Retention{Count: maxRetainCount, MaxAge: day.Duration}},
		{"both", &backendsv1alpha1.HistoryRetention{Count: count(7), MaxAge: day}, history.Retention{Count: 7, MaxAge: day.Duration}},
		{"a count above the most is clipped", &backendsv1alpha1.HistoryRetention{Count: count(5000)}, history.Retention{Count: maxRetainCount}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, historyRetention(tt.spec)); diff != "" {
				t.Errorf("historyRetention (-want +got):\n%s", diff)
			}
		})
	}
}
