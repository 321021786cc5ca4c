package controllers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/history"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// restoreTargets is what one run of a restore works with.
type restoreTargets struct {
	// locker takes and releases the source's lock, with info.
	locker stateLocker
	info   stateclient.LockInfo
	// source reads the source's state, write writes it.
	source stateStreamer
	write  stateWriter
	// store is the history's destination, prefix its keys' prefix.
	store  history.Store
	prefix string
}

// restoreRun is what one run of a restore did.
type restoreRun struct {
	// waiting is true when another held the lock: holder (nil when the
	// server does not say who).
	waiting bool
	holder  *backendsv1alpha1.LockInfo
	// restored is what the restore did, err why it stopped.
	restored history.Restored
	err      error
	// lockID is the restore's lock, once taken; unreleased, when set,
	// says why it may still be held after the run.
	lockID     string
	unreleased string
}

// HeldBytes is what the run holds while it waits to be written to status
// (see probes.Sizer).
func (restoreRun) HeldBytes() int64 { return 1 << 10 }

// restoreLockNamespace derives the IDs of restores' locks.
var restoreLockNamespace = uuid.MustParse("5d0c8f2e-9a41-4b7e-8e3f-6c2b1a9d7e40")

// newRestoreLockInfo is the LockInfo a restore takes the source's lock
// with: its ID a function of the object, so that a lock a run took and did
// not release (the manager stopped) is recognised as its own by the next.
func newRestoreLockInfo(sr *backendsv1alpha1.StateRestore, h *backendsv1alpha1.StateHistory) stateclient.LockInfo {
	return stateclient.LockInfo{
		ID:        uuid.NewSHA1(restoreLockNamespace, []byte(sr.UID)).String(),
		Operation: lockCheckOperation,
		Who:       "backend-operator/" + sr.Namespace + "/" + sr.Name,
		Info:      fmt.Sprintf("StateRestore %s writes serial %d of StateHistory %s back; released when it is written", sr.Name, sr.Spec.Serial, h.Name),
		Created:   sr.CreationTimestamp.UTC().Truncate(time.Second),
	}
}

// runRestore runs a restore once, within probeTimeout: it takes the
// source's lock (never by force: another holder makes it wait), lists the
// history's snapshots, and restores the one spec names (see
// history.Restore) under the lock, which it then releases.
func runRestore(ctx context.Context, t restoreTargets, spec backendsv1alpha1.StateRestoreSpec) (run restoreRun) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	defer t.locker.close()
	held, holder, err := t.locker.acquire(ctx, t.info)
	switch {
	case err != nil:
		return restoreRun{err: &history.StageError{Stage: history.StageSource, Err: fmt.Errorf("taking the lock: %w", err)}}
	case held == nil && holder != nil && holder.ID == t.info.ID:
		held = &heldLock{id: holder.ID, info: *holder} // taken by a run that did not end
	case held == nil:
		return restoreRun{waiting: true, holder: holder}
	}
	defer func() {
		run.lockID, run.unreleased = held.id, releaseRestoreLock(context.WithoutCancel(ctx), t.locker, *held)
	}()

	kept, err := history.List(ctx, t.store, t.prefix, historyListLimit)
	if err != nil {
		return restoreRun{err: &history.StageError{Stage: history.StageDestination, Err: err}}
	}
	plan := history.RestorePlan{Prefix: t.prefix, AllowLineageChange: spec.AllowLineageChange, MaxStateBytes: historyMaxStateBytes,
		Select: func(current statefile.Summary, found bool) (history.Ref, error) {
			return chooseSnapshot(kept, uint64(spec.Serial), spec.Lineage, current, found) //nolint:gosec // admission keeps it >= 0
		}}
	write := func(ctx context.Context, body io.ReadSeeker, size int64, md5sum [16]byte) error {
		return t.write(ctx, held.id, body, size, md5sum)
	}
	run.restored, run.err = history.Restore(ctx, history.Source(t.source), t.store, write, plan)
	return run
}

// releaseRestoreLock releases the restore's lock, and says why it may
// still be held when it cannot tell it is not.
func releaseRestoreLock(ctx context.Context, locker stateLocker, held heldLock) string {
	ctx, cancel := context.WithTimeout(ctx, lockReleaseTimeout)
	defer cancel()
	rel, err := locker.release(ctx, held, true)
	switch {
	case err != nil:
		return fmt.Sprintf("releasing it failed: %v", err)
	case rel.withheld != "":
		return rel.withheld
	}
	return ""
}

// errAmbiguousLineage is the error of chooseSnapshot when snapshots of
// several lineages, none the source's, have the serial.
var errAmbiguousLineage = errors.New("snapshots of several lineages have this serial")

// chooseSnapshot chooses the snapshot of serial to restore among kept: of
// lineage when it is set; otherwise of the source's current lineage when
// one is; otherwise the only one. Of several with the same serial and
// lineage (a state rewritten without a new serial), the newest.
func chooseSnapshot(kept []history.Snapshot, serial uint64, lineage string, current statefile.Summary, found bool) (history.Ref, error) {
	var candidates []history.Ref
	lineages := map[string]bool{}
	for _, s := range history.Newest(kept) {
		if s.Serial == serial && (lineage == "" || s.Lineage == history.LineageSegment(lineage)) {
			candidates = append(candidates, s.Ref)
			lineages[s.Lineage] = true
		}
	}
	if len(candidates) == 0 {
		return history.Ref{}, history.ErrSnapshotNotFound
	}
	if found {
		for _, c := range candidates {
			if c.Lineage == history.LineageSegment(current.Lineage) {
				return c, nil
			}
		}
	}
	if len(lineages) > 1 {
		return history.Ref{}, errAmbiguousLineage
	}
	return candidates[0], nil
}

// applyRestoreRun writes what a run did into status and returns the
// Restored observation. failures are the failure classes of the source's
// kind: a failed read or write of the source reads as its backend's probe
// reports it.
func applyRestoreRun(status *backendsv1alpha1.StateRestoreStatus, run restoreRun, historyName, prefix string, spec backendsv1alpha1.StateRestoreSpec,
	failures []failureClass, now time.Time) conditions.Observation {
	status.Holder = nil
	if run.waiting {
		status.Holder = run.holder
		return conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.WaitingForLockReason, Message: restoreWaitingMessage(run.holder)}
	}
	obs := restoreObservation(run, historyName, prefix, spec, failures)
	if obs.Status == metav1.ConditionTrue {
		ref := run.restored.Snapshot
		status.WrittenSerial = int64(run.restored.Written)                                                                                                           //nolint:gosec // a serial Terraform wrote, plus one
		status.RestoredFrom = &backendsv1alpha1.RestoredSnapshot{Serial: int64(ref.Serial), Lineage: ref.Lineage, SHA256: ref.SHA256, Key: history.Key(prefix, ref)} //nolint:gosec // as above
		done := metav1.NewTime(now)
		status.CompletionTime = &done
	}
	if run.unreleased != "" {
		obs.Message += fmt.Sprintf(". The restore's lock (ID %s) may still be held: %s; release it with terraform force-unlock %s", run.lockID, run.unreleased, run.lockID)
	}
	return obs
}

// restoreObservation is the Restored observation of a run that held the
// lock.
func restoreObservation(run restoreRun, historyName, prefix string, spec backendsv1alpha1.StateRestoreSpec, failures []failureClass) conditions.Observation {
	refused := func(reason, format string, args ...any) conditions.Observation {
		return conditions.Observation{Status: metav1.ConditionFalse, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	r := run.restored
	switch err := run.err; {
	case err == nil:
		return conditions.Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.RestoredReason,
			Message: fmt.Sprintf("Wrote serial %d of lineage %s, kept by StateHistory %s, back as serial %d, above the source's serial %d",
				r.Snapshot.Serial, r.Snapshot.Lineage, historyName, r.Written, r.Previous.Serial)}
	case errors.Is(err, history.ErrSnapshotNotFound), errors.Is(err, history.ErrSnapshotChanged):
		return refused(backendsv1alpha1.SnapshotNotFoundReason, "StateHistory %s keeps no snapshot of serial %d%s under %s: it was never taken, or spec.retain pruned it "+
			"(status.snapshots of the history lists the newest kept). Create another StateRestore naming a serial it keeps", historyName, spec.Serial, lineageClause(spec.Lineage), prefix)
	case errors.Is(err, errAmbiguousLineage):
		return refused(backendsv1alpha1.InvalidSpecReason, "Snapshots of several lineages, none the source's, have serial %d: create another StateRestore naming one in spec.lineage", spec.Serial)
	case errors.Is(err, history.ErrLineageMismatch):
		current := "holds no state"
		if r.Found {
			current = "is of lineage " + r.Previous.Lineage
		}
		return refused(backendsv1alpha1.LineageMismatchReason, "The snapshot of serial %d is of lineage %s, and the source's state %s: writing it would replace one state with another's. "+
			"Create another StateRestore with spec.allowLineageChange if that is what you want", spec.Serial, r.Snapshot.Lineage, current)
	case errors.Is(err, history.ErrEncryptedSnapshot):
		return refused(backendsv1alpha1.StateEncryptedReason, "The snapshot of serial %d is an OpenTofu-encrypted state: its serial is inside the ciphertext too, "+
			"which the operator does not rewrite, so it cannot be written forward. Restore it with tofu state push (see docs/history.md)", spec.Serial)
	}
	switch history.StageOf(run.err) {
	case history.StageDestination:
		return destinationFailure(run.err)
	case history.StageContent:
		return refused(backendsv1alpha1.SnapshotUnusableReason, "The snapshot of serial %d cannot be written forward: %s. "+
			"It will not change: create another StateRestore naming another serial", spec.Serial, errorText(run.err))
	}
	obs := probeFailure(failures, run.err)
	obs.Message = "The restore did not write the snapshot, and tries again: " + obs.Message
	return obs
}

// lineageClause names lineage in a message, when set.
func lineageClause(lineage string) string {
	if lineage == "" {
		return ""
	}
	return " of lineage " + lineage
}

// restoreWaitingMessage says whom a restore waits for.
func restoreWaitingMessage(holder *backendsv1alpha1.LockInfo) string {
	if holder == nil {
		return "The source's lock is held, by a holder the state server does not name: the restore waits for it and never forces it"
	}
	who := holder.Who
	if who == "" {
		who = "a holder that gives no name"
	}
	return fmt.Sprintf("The source's lock is held by %s (lock ID %s, operation %s): the restore waits for it, as terraform -lock-timeout does, and never forces it",
		who, holder.ID, holder.Operation)
}
