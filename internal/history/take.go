package history

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/infrastate/backend-operator/internal/statefile"
)

// Source reads the state a history keeps and hands its body to read as it
// arrives; found is false when there is no state.
type Source func(ctx context.Context, read func(io.Reader) error) (found bool, size int64, err error)

// Plan is how Take keeps one state.
type Plan struct {
	// Prefix is the prefix of the history's keys.
	Prefix string
	// Retention bounds the snapshots kept.
	Retention Retention
	// SpoolDir is the directory the state waits in between the source and
	// the store ("" is the system's temporary directory).
	SpoolDir string
	// MaxStateBytes bounds the state copied.
	MaxStateBytes int64
	// ListLimit bounds the objects listed under Prefix.
	ListLimit int
	// Now is the time the state is read at.
	Now func() time.Time
}

// Taken is what one Take did.
type Taken struct {
	// Found is false when the source holds no state: nothing else is set.
	Found bool
	// Current is the snapshot of the state read (taken at the plan's now,
	// or just after the newest snapshot listed when the store dated that
	// one later), Lineage its lineage (Current.Lineage is its key
	// segment), Encrypted true for an OpenTofu-encrypted state (copied as
	// it is stored).
	Current   Snapshot
	Lineage   string
	Encrypted bool
	// Stored is true when this Take wrote the snapshot; false when the
	// store already held it.
	Stored bool
	// Kept are the snapshots the prefix holds after pruning, newest
	// first; Pruned how many were deleted.
	Kept   []Snapshot
	Pruned int
}

// Stage names where a Take failed.
type Stage string

// The stages of a Take.
const (
	// StageSource is the read of the source's state.
	StageSource Stage = "source"
	// StageContent is the reading of the state's serial and lineage.
	StageContent Stage = "content"
	// StageDestination is the listing, writing and pruning of the store.
	StageDestination Stage = "destination"
)

// StageError is an error of Take, with the stage it failed at.
type StageError struct {
	Stage Stage
	Err   error
}

// Error implements error.
func (e *StageError) Error() string { return e.Err.Error() }

// Unwrap returns the stage's error.
func (e *StageError) Unwrap() error { return e.Err }

// StageOf returns the stage err, an error of Take, failed at.
func StageOf(err error) Stage {
	if se, ok := errors.AsType[*StageError](err); ok {
		return se.Stage
	}
	return ""
}

// Take reads src's state once and keeps it: the state is spooled to a
// file (never held in memory), its serial and lineage read from the file
// (an encrypted state's clear-text ones: it is not decrypted, and the
// store receives exactly the bytes the source stores), and it is written
// to the store under its key unless a snapshot of the same content is
// there already. The prefix is then listed (a manager that restarted
// finds what it wrote before) and pruned by the plan's retention, the
// newest snapshot always kept.
//
// On error, Taken holds what was learned before it: after a failed
// prune, the snapshot is stored all the same.
func Take(ctx context.Context, src Source, store Store, plan Plan) (Taken, error) {
	var (
		taken   Taken
		spooled *Spooled
	)
	found, _, err := src(ctx, func(r io.Reader) error {
		var err error
		spooled, err = Spool(plan.SpoolDir, plan.MaxStateBytes, r)
		return err
	})
	if spooled != nil {
		defer spooled.Remove()
	}
	if err != nil {
		return taken, &StageError{Stage: StageSource, Err: err}
	}
	if !found || spooled == nil {
		return taken, nil
	}
	taken.Found = true

	summary, err := summarize(spooled)
	if err != nil {
		return taken, &StageError{Stage: StageContent, Err: err}
	}
	taken.Lineage, taken.Encrypted = summary.Lineage, summary.Encrypted
	taken.Current = Snapshot{Ref: NewRef(summary.Lineage, summary.Serial, spooled.SHA256), TakenAt: plan.Now(), Size: spooled.Size}

	kept, err := list(ctx, store, plan)
	if err != nil {
		return taken, &StageError{Stage: StageDestination, Err: err}
	}
	if Due(kept, taken.Current.Ref) {
		if err := put(ctx, store, plan.Prefix, spooled, taken.Current.Ref); err != nil {
			return taken, &StageError{Stage: StageDestination, Err: err}
		}
		taken.Stored = true
		taken.Current.TakenAt = newestAt(taken.Current.TakenAt, kept)
		kept = append(kept, taken.Current)
	}

	keep, prune := Prune(kept, plan.Retention, plan.Now())
	taken.Kept = keep
	for i, s := range prune {
		if err := store.Delete(ctx, Key(plan.Prefix, s.Ref)); err != nil {
			taken.Kept = append(taken.Kept, prune[i:]...)
			return taken, &StageError{Stage: StageDestination, Err: fmt.Errorf("pruning snapshot serial %d: %w", s.Serial, err)}
		}
		taken.Pruned++
	}
	return taken, nil
}

// newestAt is at, or just after the newest of snapshots when that one is
// not older: the store's clock dates the snapshots listed and may be ahead
// of the plan's, and the state just read must still be the newest, never
// pruned as an older one.
func newestAt(at time.Time, snapshots []Snapshot) time.Time {
	for _, s := range snapshots {
		if !s.TakenAt.Before(at) {
			at = s.TakenAt.Add(time.Nanosecond)
		}
	}
	return at
}

// summarize reads the spooled state's serial and lineage.
func summarize(s *Spooled) (statefile.Summary, error) {
	r, err := s.Reader()
	if err != nil {
		return statefile.Summary{}, err
	}
	summary, err := statefile.ReadSummary(r, nil)
	if err != nil {
		return statefile.Summary{}, fmt.Errorf("reading the state's serial and lineage: %w", err)
	}
	return summary, nil
}

// List returns the snapshots kept under the plan's prefix: the objects
// whose keys Key wrote. Other objects under it are left alone.
func List(ctx context.Context, store Store, prefix string, limit int) ([]Snapshot, error) {
	return list(ctx, store, Plan{Prefix: prefix, ListLimit: limit})
}

func list(ctx context.Context, store Store, plan Plan) ([]Snapshot, error) {
	objects, err := store.List(ctx, strings.TrimSuffix(plan.Prefix, "/")+"/", plan.ListLimit)
	if err != nil {
		return nil, fmt.Errorf("listing the snapshots: %w", err)
	}
	var kept []Snapshot
	for _, o := range objects {
		ref, err := ParseKey(plan.Prefix, o.Key)
		if err != nil {
			continue
		}
		kept = append(kept, Snapshot{Ref: ref, TakenAt: o.LastModified, Size: o.Size})
	}
	return kept, nil
}

// put writes the spooled state under ref's key; a snapshot of the same
// content already there (written since the listing) is stored.
func put(ctx context.Context, store Store, prefix string, s *Spooled, ref Ref) error {
	r, err := s.Reader()
	if err != nil {
		return err
	}
	err = store.Put(ctx, Key(prefix, ref), r, s.Size, s.MD5)
	if err != nil && !errors.Is(err, ErrExists) {
		return fmt.Errorf("writing the snapshot of serial %d: %w", ref.Serial, err)
	}
	return nil
}
