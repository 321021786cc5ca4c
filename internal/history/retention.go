package history

import (
	"slices"
	"time"
)

// Snapshot is a snapshot kept, and when it was taken.
type Snapshot struct {
	Ref
	// TakenAt is when the state it holds was read.
	TakenAt time.Time
	// Size is its size in bytes.
	Size int64
}

// Retention bounds the snapshots kept: at most Count (0: no bound), none
// older than MaxAge (0: no bound). The newest is always kept.
type Retention struct {
	Count  int
	MaxAge time.Duration
}

// Newest orders snapshots newest first: by when they were taken, then by
// serial.
func Newest(snapshots []Snapshot) []Snapshot {
	out := slices.Clone(snapshots)
	slices.SortStableFunc(out, func(a, b Snapshot) int {
		if c := b.TakenAt.Compare(a.TakenAt); c != 0 {
			return c
		}
		switch {
		case a.Serial > b.Serial:
			return -1
		case a.Serial < b.Serial:
			return 1
		}
		return 0
	})
	return out
}

// Prune splits snapshots into those r keeps and those it prunes at now,
// both newest first. The newest is kept whatever its age.
func Prune(snapshots []Snapshot, r Retention, now time.Time) (keep, prune []Snapshot) {
	for i, s := range Newest(snapshots) {
		tooMany := r.Count > 0 && i >= r.Count
		tooOld := r.MaxAge > 0 && now.Sub(s.TakenAt) > r.MaxAge
		if i > 0 && (tooMany || tooOld) {
			prune = append(prune, s)
			continue
		}
		keep = append(keep, s)
	}
	return keep, prune
}

// maxSkipped bounds the serials Skipped lists.
const maxSkipped = 100

// Skipped returns the serials a history missed between a read that saw
// previous and one that sees current: those between them, when the
// lineage is the same and the serial went up by more than one; the
// newest maxSkipped of them. A new lineage, or a serial that did not go
// up, skipped nothing the history can name.
func Skipped(previous, current Ref) []uint64 {
	if previous.Lineage != current.Lineage || current.Serial <= previous.Serial+1 {
		return nil
	}
	from := previous.Serial + 1
	if current.Serial-from > maxSkipped {
		from = current.Serial - maxSkipped
	}
	out := make([]uint64, 0, current.Serial-from)
	for s := from; s < current.Serial; s++ {
		out = append(out, s)
	}
	return out
}

// Due reports whether a read that sees current must be copied: no
// snapshot of its lineage, serial and content is kept yet.
func Due(kept []Snapshot, current Ref) bool {
	return !slices.ContainsFunc(kept, func(s Snapshot) bool { return s.Ref == current })
}
