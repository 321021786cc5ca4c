package controllers

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/history"
)

// maxStatusSnapshots is the most snapshots status.snapshots lists, and
// maxSkippedSerials the most skipped serials status.skippedSerials does.
const (
	maxStatusSnapshots = 20
	maxSkippedSerials  = 100
)

// applyHistoryRead writes what a read did into status and returns the
// SnapshotsReady observation. A read that failed keeps the snapshots
// listed before: they are still in the store, as far as anyone knows.
func applyHistoryRead(status *backendsv1alpha1.StateHistoryStatus, read historyRead, source backendsv1alpha1.BackendReference, failures []failureClass) conditions.Observation {
	taken := read.taken
	if taken.Found {
		now := metav1.NewTime(taken.Current.TakenAt)
		status.LastReadTime = &now
	}
	if read.err == nil || taken.Kept != nil {
		previous := status.Snapshots
		if taken.Stored && len(previous) > 0 {
			status.SkippedSerials = skippedSerials(status.SkippedSerials, previous[0], taken)
		}
		status.Snapshots = snapshotStatuses(taken, previous, read.holder, status.DestinationPrefix)
		status.SnapshotCount = int32(len(taken.Kept)) //nolint:gosec // bounded by historyListLimit
	}
	if read.err != nil {
		return historyFailure(read.err, source, failures)
	}
	if !taken.Found {
		return conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.StateNotFoundReason,
			Message: fmt.Sprintf("%s %s holds no state for the workspace yet: there is nothing to keep until a run writes one", source.Kind, source.Name)}
	}
	verb := "is already kept"
	if taken.Stored {
		verb = "is kept"
	}
	msg := fmt.Sprintf("Serial %d of lineage %s %s (%d bytes, sha256 %s)", taken.Current.Serial, taken.Current.Lineage, verb, taken.Current.Size, taken.Current.SHA256)
	if taken.Encrypted {
		msg += ", encrypted as the source stores it"
	}
	if taken.Pruned > 0 {
		msg += fmt.Sprintf("; %d older snapshots pruned by spec.retain", taken.Pruned)
	}
	return conditions.Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.SnapshotStoredReason, Message: msg}
}

// skippedSerials adds to skipped the serials of the current lineage that
// came and went between the newest snapshot listed before and the state
// read now, and keeps the newest maxSkippedSerials.
func skippedSerials(skipped []int64, newest backendsv1alpha1.StateSnapshot, taken history.Taken) []int64 {
	if newest.Serial < 0 {
		return skipped
	}
	before := history.Ref{Lineage: newest.Lineage, Serial: uint64(newest.Serial)}
	for _, serial := range history.Skipped(before, taken.Current.Ref) {
		if containsSerial(taken.Kept, taken.Current.Lineage, serial) {
			continue
		}
		skipped = append(skipped, int64(serial)) //nolint:gosec // a serial Terraform wrote fits
	}
	if len(skipped) > maxSkippedSerials {
		skipped = skipped[len(skipped)-maxSkippedSerials:]
	}
	return skipped
}

// snapshotStatuses is status.snapshots: the newest kept snapshots, with
// the lock holder recorded when each was taken (the current one's is
// holder; older ones keep theirs from the previous status).
func snapshotStatuses(taken history.Taken, previous []backendsv1alpha1.StateSnapshot, holder *backendsv1alpha1.LockInfo, prefix string) []backendsv1alpha1.StateSnapshot {
	holders := map[string]*backendsv1alpha1.LockInfo{}
	for _, p := range previous {
		holders[p.Key] = p.Holder
	}
	kept := taken.Kept[:min(len(taken.Kept), maxStatusSnapshots)]
	out := make([]backendsv1alpha1.StateSnapshot, 0, len(kept))
	for _, s := range kept {
		key := history.Key(prefix, s.Ref)
		st := backendsv1alpha1.StateSnapshot{Serial: int64(s.Serial), Lineage: s.Lineage, SizeBytes: s.Size, //nolint:gosec // a serial Terraform wrote fits
			SHA256: s.SHA256, Key: key, TakenAt: metav1.NewTime(s.TakenAt), Holder: holders[key]}
		if taken.Stored && s.Ref == taken.Current.Ref {
			st.Holder = holder
		}
		out = append(out, st)
	}
	return out
}

// historyFailure is the SnapshotsReady observation of a read that failed
// at its stage: the source's read (as a probe reports it), the state's
// content, or the destination.
func historyFailure(err error, source backendsv1alpha1.BackendReference, failures []failureClass) conditions.Observation {
	switch history.StageOf(err) {
	case history.StageSource:
		obs := probeFailure(failures, err)
		obs.Message = fmt.Sprintf("Reading the state of %s %s: %s", source.Kind, source.Name, obs.Message)
		return obs
	case history.StageContent:
		return conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.StateUnreadableReason,
			Message: fmt.Sprintf("The state of %s %s cannot be kept: %s. A snapshot is keyed by the state's serial and lineage, which it must hold", source.Kind, source.Name, errorText(err))}
	}
	return destinationFailure(err)
}

// destinationFailure is the SnapshotsReady observation of a destination
// that did not take a snapshot: unreachable, refusing, or full.
func destinationFailure(err error) conditions.Observation {
	obs := conditions.Observation{Status: metav1.ConditionFalse}
	switch {
	case errors.Is(err, history.ErrCrowded):
		obs.Reason = backendsv1alpha1.DestinationFullReason
		obs.Message = fmt.Sprintf("The destination's prefix holds more than %d objects: %s. Move the objects that are not snapshots elsewhere, or set another spec.destination.prefix",
			historyListLimit, errorText(err))
	case errors.Is(err, cos.ErrStoreFull):
		obs.Reason = backendsv1alpha1.DestinationFullReason
		obs.Message = "The destination refuses new objects: " + errorText(err) + ". Raise the bucket's quota or free space, or lower spec.retain"
	case errors.Is(err, cos.ErrUnreachable), errors.Is(err, context.DeadlineExceeded):
		obs.Reason = backendsv1alpha1.DestinationUnreachableReason
		obs.Message = "The destination did not answer: " + errorText(err) + ". Check the CosBackend's endpoint and region, and the network between the operator and it"
	case errors.Is(err, cos.ErrAccessDenied):
		obs.Reason = backendsv1alpha1.DestinationRefusedReason
		obs.Message = "The destination refused the operator's requests: " + errorText(err) + ". Its credentials need to list, read, write and delete objects under the prefix"
	case errors.Is(err, cos.ErrBucketNotFound):
		obs.Reason = backendsv1alpha1.DestinationRefusedReason
		obs.Message = "The destination's bucket does not exist: " + errorText(err) + ". Create it, or fix the CosBackend's bucket and region"
	default:
		obs.Reason = backendsv1alpha1.DestinationRefusedReason
		obs.Message = "The destination did not keep the snapshot: " + errorText(err)
	}
	return obs
}
