package history

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// tfSummary is what statefile.ReadSummary reads of tfState.
func tfSummary(lineage string, serial uint64) statefile.Summary {
	return statefile.Summary{Serial: serial, Lineage: lineage, TerraformVersion: "1.5.7", OutputCount: 2}
}

// recorder is a Writer that keeps the state it is given, read whole
// twice: a writer may rewind the body to send it again.
type recorder struct {
	calls int
	body  []byte
	err   error // what the write returns
}

func (r *recorder) write(_ context.Context, body io.ReadSeeker, size int64, md5sum [16]byte) error {
	r.calls++
	first, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return err
	}
	again, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	if !bytes.Equal(first, again) {
		return errors.New("the body differs when read again")
	}
	if int64(len(first)) != size || md5.Sum(first) != md5sum {
		return errors.New("the body does not match its size and MD5")
	}
	r.body = first
	return r.err
}

// topSerial splits a state as Terraform writes it around its serial: the
// first "serial" key is the top-level one (it comes before the outputs).
var topSerial = regexp.MustCompile(`(?s)^(.*?"serial": )(\d+)(.*)$`)

// assertForwarded checks that written is snapshot with its serial set to
// serial: equal as JSON but for the serial, and equal byte for byte but
// for the serial's digits.
func assertForwarded(t *testing.T, snapshot, written []byte, serial uint64) {
	t.Helper()
	var want, got map[string]any
	if err := json.Unmarshal(snapshot, &want); err != nil {
		t.Fatalf("the snapshot is no JSON: %v", err)
	}
	if err := json.Unmarshal(written, &got); err != nil {
		t.Fatalf("Restore wrote no JSON: %v\n%s", err, written)
	}
	if got["serial"] != float64(serial) {
		t.Errorf("Restore wrote serial %v, want %d", got["serial"], serial)
	}
	delete(want, "serial")
	delete(got, "serial")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Restore changed the state beyond its serial (-snapshot +written):\n%s", diff)
	}
	s, w := topSerial.FindSubmatch(snapshot), topSerial.FindSubmatch(written)
	if s == nil || w == nil {
		t.Fatalf("no serial found in the snapshot or in what Restore wrote:\n%s", written)
	}
	if !bytes.Equal(s[1], w[1]) || !bytes.Equal(s[3], w[3]) || string(w[2]) != strconv.FormatUint(serial, 10) {
		t.Errorf("Restore wrote\n%s\nwant the snapshot with serial %d:\n%s", written, serial, snapshot)
	}
}

// takeSnapshot keeps state in b as a history does, and returns its Ref.
func takeSnapshot(t *testing.T, b *bucket, state []byte) Ref {
	t.Helper()
	taken, err := Take(t.Context(), stateSource(state), b.store, testPlan(t.TempDir()))
	if err != nil || !taken.Stored {
		t.Fatalf("Take() = stored %t, %v; want the snapshot stored", taken.Stored, err)
	}
	return taken.Current.Ref
}

func TestRestore(t *testing.T) {
	snapshot := tfState(lineage, 3, "witty-gecko")
	source := tfState(lineage, 9, "brave-otter")
	const oddLineage = "team/network ../state"
	cases := map[string]struct {
		snapshot []byte // kept before the restore; snapshot when nil
		src      Source // stateSource(source) when nil
		// setup changes the store after the snapshot was kept at key.
		setup     func(t *testing.T, b *bucket, key string)
		ref       func(kept Ref) Ref // the snapshot restored; kept when nil
		allow     bool
		maxBytes  int64 // 1 MiB when 0
		writeErr  error
		want      Restored
		wantErr   error
		wantStage Stage
	}{
		"the snapshot is written one serial above the source's": {
			want: Restored{Previous: tfSummary(lineage, 9), Found: true, Written: 10},
		},
		"a serial with more digits than the snapshot's": {
			src:  stateSource(tfState(lineage, 1234567, "brave-otter")),
			want: Restored{Previous: tfSummary(lineage, 1234567), Found: true, Written: 1234568},
		},
		"a snapshot of exactly the limit, whose serial grows": {
			src:      stateSource(tfState(lineage, 1234567, "brave-otter")),
			maxBytes: int64(len(snapshot)),
			want:     Restored{Previous: tfSummary(lineage, 1234567), Found: true, Written: 1234568},
		},
		"an encrypted source of the same lineage": {
			src:  stateSource(encryptedState(lineage, 9)),
			want: Restored{Previous: statefile.Summary{Serial: 9, Lineage: lineage, Encrypted: true}, Found: true, Written: 10},
		},
		"a lineage keyed by its digest": {
			snapshot: tfState(oddLineage, 3, "witty-gecko"),
			src:      stateSource(tfState(oddLineage, 9, "brave-otter")),
			want:     Restored{Previous: tfSummary(oddLineage, 9), Found: true, Written: 10},
		},
		"a source of another lineage is refused": {
			src:     stateSource(tfState(otherLineage, 9, "brave-otter")),
			want:    Restored{Previous: tfSummary(otherLineage, 9), Found: true},
			wantErr: ErrLineageMismatch,
		},
		"a source of another lineage, allowed": {
			src:   stateSource(tfState(otherLineage, 9, "brave-otter")),
			allow: true,
			want:  Restored{Previous: tfSummary(otherLineage, 9), Found: true, Written: 10},
		},
		"a source without a state is refused": {
			src:     stateSource(nil),
			wantErr: ErrLineageMismatch,
		},
		"a source without a state, allowed: one above the snapshot's serial": {
			src:   stateSource(nil),
			allow: true,
			want:  Restored{Written: 4},
		},
		"a snapshot pruned since": {
			setup:   func(_ *testing.T, b *bucket, key string) { b.srv.DeleteObject(testBucket, key) },
			want:    Restored{Previous: tfSummary(lineage, 9), Found: true},
			wantErr: ErrSnapshotNotFound,
		},
		"a snapshot never taken": {
			ref:     func(kept Ref) Ref { kept.SHA256 = hashA; return kept },
			want:    Restored{Previous: tfSummary(lineage, 9), Found: true},
			wantErr: ErrSnapshotNotFound,
		},
		"an object rewritten in the store, with its MD5": {
			setup: func(_ *testing.T, b *bucket, key string) {
				other := tfState(lineage, 3, "evil-twin")
				sum := md5.Sum(other)
				b.srv.PutObject(testBucket, key, other, map[string]string{"md5": hex.EncodeToString(sum[:])})
			},
			want:    Restored{Previous: tfSummary(lineage, 9), Found: true},
			wantErr: ErrSnapshotChanged,
		},
		"an object rewritten in the store, its MD5 left": {
			setup: func(t *testing.T, b *bucket, key string) {
				t.Helper()
				_, meta, _ := b.srv.Object(testBucket, key)
				b.srv.PutObject(testBucket, key, tfState(lineage, 3, "evil-twin"), meta)
			},
			want:      Restored{Previous: tfSummary(lineage, 9), Found: true},
			wantErr:   cos.ErrChecksumMismatch,
			wantStage: StageDestination,
		},
		"an encrypted snapshot is refused": {
			snapshot: encryptedState(lineage, 3),
			want:     Restored{Previous: tfSummary(lineage, 9), Found: true},
			wantErr:  ErrEncryptedSnapshot,
		},
		"a snapshot above the limit": {
			maxBytes:  int64(len(snapshot)) - 1,
			want:      Restored{Previous: tfSummary(lineage, 9), Found: true},
			wantErr:   cos.ErrStateTooLarge,
			wantStage: StageDestination,
		},
		"a destination that denies access": {
			setup:     func(_ *testing.T, b *bucket, _ string) { b.srv.DenyAccess(testBucket, true) },
			want:      Restored{Previous: tfSummary(lineage, 9), Found: true},
			wantErr:   cos.ErrAccessDenied,
			wantStage: StageDestination,
		},
		"a source that fails": {
			src: func(context.Context, func(io.Reader) error) (bool, int64, error) {
				return false, 0, errSource
			},
			wantErr:   errSource,
			wantStage: StageSource,
		},
		"a source that holds no state document": {
			src:       stateSource([]byte("<html>502 Bad Gateway</html>")),
			wantErr:   statefile.ErrMalformed,
			wantStage: StageSource,
		},
		"a write that fails": {
			writeErr:  errSource,
			want:      Restored{Previous: tfSummary(lineage, 9), Found: true, Written: 10},
			wantErr:   errSource,
			wantStage: StageSource,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBucket(t)
			kept := tc.snapshot
			if kept == nil {
				kept = snapshot
			}
			ref := takeSnapshot(t, b, kept)
			if tc.setup != nil {
				tc.setup(t, b, Key(testPrefix, ref))
			}
			if tc.ref != nil {
				ref = tc.ref(ref)
			}
			src := tc.src
			if src == nil {
				src = stateSource(source)
			}
			dir := t.TempDir()
			plan := RestorePlan{Prefix: testPrefix, Snapshot: ref, AllowLineageChange: tc.allow, SpoolDir: dir, MaxStateBytes: 1 << 20}
			if tc.maxBytes != 0 {
				plan.MaxStateBytes = tc.maxBytes
			}
			w := recorder{err: tc.writeErr}

			got, err := Restore(t.Context(), src, b.store, w.write, plan)

			if (tc.wantErr == nil && err != nil) || !errors.Is(err, tc.wantErr) {
				t.Errorf("Restore() error = %v, want %v", err, tc.wantErr)
			}
			if stage := StageOf(err); stage != tc.wantStage {
				t.Errorf("StageOf(%v) = %q, want %q", err, stage, tc.wantStage)
			}
			if got.Snapshot != (Ref{}) && got.Snapshot != ref {
				t.Errorf("Restore() reports snapshot %+v, want the plan's %+v", got.Snapshot, ref)
			}
			got.Snapshot = Ref{} // checked above: the cases' want leaves it out
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Restore() (-want +got):\n%s", diff)
			}
			switch {
			case tc.want.Written == 0 && w.calls != 0:
				t.Errorf("Restore() wrote %d times after a refusal:\n%s", w.calls, w.body)
			case tc.want.Written != 0 && w.calls != 1:
				t.Errorf("Restore() wrote %d times, want once", w.calls)
			case tc.want.Written != 0:
				assertForwarded(t, kept, w.body, tc.want.Written)
			}
			if n := entries(t, dir); n != 0 {
				t.Errorf("%d spool files left", n)
			}
		})
	}
}

// TestTakeRestoreTake keeps a state, restores it over a newer one and
// keeps the result: a restore is a new serial the history keeps as well.
func TestTakeRestoreTake(t *testing.T) {
	b := newBucket(t)
	dir := t.TempDir()
	backend := tfState(lineage, 3, "witty-gecko")
	src := func(_ context.Context, read func(io.Reader) error) (bool, int64, error) {
		return true, int64(len(backend)), read(bytes.NewReader(backend))
	}
	write := func(_ context.Context, body io.ReadSeeker, _ int64, _ [16]byte) error {
		data, err := io.ReadAll(body)
		backend = data
		return err
	}
	plan := testPlan(dir)

	first, err := Take(t.Context(), src, b.store, plan)
	if err != nil {
		t.Fatalf("Take() = %v", err)
	}
	backend = tfState(lineage, 5, "brave-otter")
	if _, err := Take(t.Context(), src, b.store, plan); err != nil {
		t.Fatalf("Take() = %v", err)
	}
	restored, err := Restore(t.Context(), src, b.store, write,
		RestorePlan{Prefix: testPrefix, Snapshot: first.Current.Ref, SpoolDir: dir, MaxStateBytes: 1 << 20})
	if err != nil || restored.Written != 6 {
		t.Fatalf("Restore() = written %d, %v; want serial 6", restored.Written, err)
	}
	if want := tfState(lineage, 6, "witty-gecko"); !bytes.Equal(backend, want) {
		t.Errorf("the backend holds\n%s\nwant\n%s", backend, want)
	}
	last, err := Take(t.Context(), src, b.store, plan)
	if err != nil || !last.Stored {
		t.Fatalf("Take() of the restored state = stored %t, %v; want stored", last.Stored, err)
	}
	if diff := cmp.Diff([]uint64{6, 5, 3}, serials(last.Kept)); diff != "" {
		t.Errorf("kept serials (-want +got):\n%s", diff)
	}
	if n := entries(t, dir); n != 0 {
		t.Errorf("%d spool files left", n)
	}
}
