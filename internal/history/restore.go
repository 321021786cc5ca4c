package history

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/infrastate/backend-operator/internal/statefile"
)

// Writer writes a whole state to the source, under the lock its caller
// holds: size bytes of body, which it may rewind to send again, checked
// against md5sum.
type Writer func(ctx context.Context, body io.ReadSeeker, size int64, md5sum [16]byte) error

// RestorePlan is what Restore writes back, and how.
type RestorePlan struct {
	// Prefix is the prefix of the history's keys, Snapshot the snapshot
	// to write back.
	Prefix   string
	Snapshot Ref
	// Select, when set, chooses Snapshot from the source's state as Restore
	// reads it (found false when it holds none), before anything else.
	Select func(current statefile.Summary, found bool) (Ref, error)
	// AllowLineageChange lets a snapshot of another lineage than the
	// source's (or a source that holds no state) be written.
	AllowLineageChange bool
	// SpoolDir and MaxStateBytes are as in Plan.
	SpoolDir      string
	MaxStateBytes int64
}

// Restored is what Restore did.
type Restored struct {
	// Previous is the source's state before the restore (found false when
	// it held none); Written the serial the snapshot was written under.
	Previous statefile.Summary
	Found    bool
	Written  uint64
	// Snapshot is the snapshot written (or chosen, when Restore failed
	// after choosing).
	Snapshot Ref
}

// Restore refusals: Restore writes nothing after them.
var (
	// ErrSnapshotNotFound means the store holds no snapshot of the plan's
	// key: it was never taken, or was pruned.
	ErrSnapshotNotFound = errors.New("the snapshot is not in the store")
	// ErrLineageMismatch means the snapshot's lineage is not the
	// source's, and the plan does not allow a change of lineage.
	ErrLineageMismatch = errors.New("the snapshot's lineage is not the source's")
	// ErrEncryptedSnapshot means the snapshot is an OpenTofu-encrypted
	// state: its serial is inside the ciphertext too, which Restore does
	// not rewrite.
	ErrEncryptedSnapshot = errors.New("the snapshot is an encrypted state")
	// ErrSnapshotChanged means the snapshot read back does not hash to
	// the SHA-256 its key names: someone rewrote the object.
	ErrSnapshotChanged = errors.New("the snapshot does not match the hash its key names")
)

// Restore writes the plan's snapshot back to the source as a new serial:
// it reads the source's serial and lineage, refuses a snapshot of another
// lineage (unless allowed), reads the snapshot from the store (checked
// against the hash its key names), and writes it with its serial set to
// one above the source's, so that a runner holding a plan of any older
// serial cannot write over it unnoticed. The caller holds the source's
// lock throughout. Everything streams through spool files: memory does
// not grow with the state.
func Restore(ctx context.Context, src Source, store Store, write Writer, plan RestorePlan) (Restored, error) {
	var res Restored
	found, _, err := src(ctx, func(r io.Reader) error {
		var err error
		res.Previous, err = statefile.ReadSummary(r, nil)
		return err
	})
	if err != nil {
		return res, &StageError{Stage: StageSource, Err: fmt.Errorf("reading the source's state: %w", err)}
	}
	res.Found = found
	if plan.Select != nil {
		if plan.Snapshot, err = plan.Select(res.Previous, found); err != nil {
			return res, err
		}
	}
	res.Snapshot = plan.Snapshot
	if !plan.AllowLineageChange && (!found || LineageSegment(res.Previous.Lineage) != plan.Snapshot.Lineage) {
		return res, ErrLineageMismatch
	}

	snapshot, err := fetch(ctx, store, plan)
	if err != nil {
		return res, err
	}
	defer snapshot.Remove()

	res.Written = res.Previous.Serial + 1
	if !found {
		res.Written = plan.Snapshot.Serial + 1
	}
	forwarded, err := forward(snapshot, res.Written, plan)
	if err != nil {
		return res, err
	}
	defer forwarded.Remove()
	body, err := forwarded.Reader()
	if err != nil {
		return res, err
	}
	if err := write(ctx, body, forwarded.Size, forwarded.MD5); err != nil {
		return res, &StageError{Stage: StageSource, Err: fmt.Errorf("writing the snapshot as serial %d: %w", res.Written, err)}
	}
	return res, nil
}

// fetch spools the plan's snapshot from the store and checks it: the hash
// its key names, and that it is not encrypted.
func fetch(ctx context.Context, store Store, plan RestorePlan) (*Spooled, error) {
	var snapshot *Spooled
	found, _, err := store.Stream(ctx, Key(plan.Prefix, plan.Snapshot), plan.MaxStateBytes, func(r io.Reader) error {
		var err error
		snapshot, err = Spool(plan.SpoolDir, plan.MaxStateBytes, r)
		return err
	})
	switch {
	case err != nil:
		if snapshot != nil {
			snapshot.Remove()
		}
		return nil, &StageError{Stage: StageDestination, Err: fmt.Errorf("reading the snapshot: %w", err)}
	case !found || snapshot == nil:
		return nil, ErrSnapshotNotFound
	case snapshot.SHA256 != plan.Snapshot.SHA256:
		snapshot.Remove()
		return nil, ErrSnapshotChanged
	}
	summary, err := summarize(snapshot)
	switch {
	case err != nil:
		snapshot.Remove()
		return nil, &StageError{Stage: StageContent, Err: err}
	case summary.Encrypted:
		snapshot.Remove()
		return nil, ErrEncryptedSnapshot
	}
	return snapshot, nil
}

// forward spools snapshot with its serial set to serial.
func forward(snapshot *Spooled, serial uint64, plan RestorePlan) (*Spooled, error) {
	r, err := snapshot.Reader()
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = pw.CloseWithError(Forward(pw, r, serial))
	}()
	out, err := Spool(plan.SpoolDir, plan.MaxStateBytes+32, pr) // room for a longer serial
	_ = pr.CloseWithError(io.ErrClosedPipe)                     // ends Forward if Spool stopped early
	<-done
	if err != nil {
		return nil, &StageError{Stage: StageContent, Err: fmt.Errorf("writing the snapshot forward: %w", err)}
	}
	return out, nil
}
