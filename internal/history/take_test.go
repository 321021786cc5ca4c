package history

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/cos/costest"
	"github.com/infrastate/backend-operator/internal/statefile"
)

func TestTake(t *testing.T) {
	state := tfState(lineage, 3, "witty-gecko")
	current := Snapshot{Ref: NewRef(lineage, 3, hashOf(state)), Size: int64(len(state))}
	encrypted := encryptedState(lineage, 3)
	encryptedCurrent := Snapshot{Ref: snapshotRef(t, encrypted), Size: int64(len(encrypted))}
	const oddLineage = "team/network ../state"
	odd := tfState(oddLineage, 3, "witty-gecko")
	oddCurrent := Snapshot{Ref: snapshotRef(t, odd), Size: int64(len(odd))}
	others := map[string][]byte{
		testPrefix + "/README.md":                                                         []byte("kept by hand"),
		testPrefix + "/" + lineage + "/notes.txt":                                         []byte("notes"),
		testPrefix + "/" + lineage + "/00000000000000000001-nothex.tfstate":               []byte("{}"),
		testPrefix + "/" + lineage + "/1-" + current.SHA256 + ".tfstate":                  []byte("{}"),
		testPrefix + "/nested/" + lineage + "/00000000000000000001-" + hashA + ".tfstate": []byte("{}"),
	}
	stored := func(s Snapshot, lin string, encrypted bool) Taken {
		return Taken{Found: true, Current: s, Lineage: lin, Encrypted: encrypted, Stored: true, Kept: []Snapshot{s}}
	}
	learned := Taken{Found: true, Current: current, Lineage: lineage}
	older := tfState(lineage, 2, "brave-otter")

	cases := map[string]struct {
		src         Source // stateSource(state) when nil
		setup       func(t *testing.T, b *bucket)
		plan        func(*Plan)
		want        Taken
		wantStage   Stage
		wantErr     error
		wantObjects map[string][]byte
	}{
		"a new state is stored byte for byte under its key": {
			want:        stored(current, lineage, false),
			wantObjects: map[string][]byte{testPrefix + "/" + lineage + "/00000000000000000003-" + hashOf(state) + ".tfstate": state},
		},
		"a state of exactly the limit is stored": {
			plan:        func(p *Plan) { p.MaxStateBytes = int64(len(state)) },
			want:        stored(current, lineage, false),
			wantObjects: map[string][]byte{snapshotKey(t, testPrefix, state): state},
		},
		"an encrypted state is stored as it is, by its clear-text serial and lineage": {
			src:         stateSource(encrypted),
			want:        stored(encryptedCurrent, lineage, true),
			wantObjects: map[string][]byte{snapshotKey(t, testPrefix, encrypted): encrypted},
		},
		"a lineage that is no plain name is keyed by its digest": {
			src:         stateSource(odd),
			want:        stored(oddCurrent, oddLineage, false),
			wantObjects: map[string][]byte{testPrefix + "/" + LineageSegment(oddLineage) + "/00000000000000000003-" + oddCurrent.SHA256 + ".tfstate": odd},
		},
		"no state stores nothing": {
			src:         stateSource(nil),
			wantObjects: map[string][]byte{},
		},
		"a source that fails": {
			src: func(context.Context, func(io.Reader) error) (bool, int64, error) {
				return false, 0, errSource
			},
			wantStage:   StageSource,
			wantErr:     errSource,
			wantObjects: map[string][]byte{},
		},
		"a source whose body breaks off": {
			src: func(_ context.Context, read func(io.Reader) error) (bool, int64, error) {
				return true, int64(len(state)), read(failingReader{bytes.NewReader(state[:100])})
			},
			wantStage:   StageSource,
			wantObjects: map[string][]byte{},
		},
		"a source that fails after the whole body": {
			src: func(_ context.Context, read func(io.Reader) error) (bool, int64, error) {
				if err := read(bytes.NewReader(state)); err != nil {
					return true, 0, err
				}
				return true, int64(len(state)), errSource
			},
			wantStage:   StageSource,
			wantErr:     errSource,
			wantObjects: map[string][]byte{},
		},
		"a state above the limit": {
			plan:        func(p *Plan) { p.MaxStateBytes = int64(len(state)) - 1 },
			wantStage:   StageSource,
			wantErr:     ErrTooLarge,
			wantObjects: map[string][]byte{},
		},
		"a state that does not parse": {
			src:         stateSource([]byte(`{"version": 4, "serial": 3, "lineage": `)),
			want:        Taken{Found: true},
			wantStage:   StageContent,
			wantErr:     statefile.ErrMalformed,
			wantObjects: map[string][]byte{},
		},
		"a state of another format version": {
			src:         stateSource([]byte(`{"version": 3, "serial": 3, "lineage": "` + lineage + `"}`)),
			want:        Taken{Found: true},
			wantStage:   StageContent,
			wantErr:     statefile.ErrUnsupportedVersion,
			wantObjects: map[string][]byte{},
		},
		"a destination that denies access": {
			setup:       func(_ *testing.T, b *bucket) { b.srv.DenyAccess(testBucket, true) },
			want:        learned,
			wantStage:   StageDestination,
			wantErr:     cos.ErrAccessDenied,
			wantObjects: map[string][]byte{},
		},
		"a prefix holding more objects than the list limit": {
			setup: func(_ *testing.T, b *bucket) {
				for key, data := range others {
					b.srv.PutObject(testBucket, key, data, nil)
				}
			},
			plan:        func(p *Plan) { p.ListLimit = len(others) - 1 },
			want:        learned,
			wantStage:   StageDestination,
			wantErr:     ErrCrowded,
			wantObjects: others,
		},
		"objects under the prefix that are no snapshots are neither counted nor pruned": {
			setup: func(_ *testing.T, b *bucket) {
				for key, data := range others {
					b.srv.PutObject(testBucket, key, data, nil)
				}
			},
			plan: func(p *Plan) { p.Retention = Retention{Count: 1} },
			want: stored(current, lineage, false),
			wantObjects: func() map[string][]byte {
				out := map[string][]byte{snapshotKey(t, testPrefix, state): state}
				maps.Copy(out, others)
				return out
			}(),
		},
		"a prefix does not reach the keys of a longer one": {
			setup: func(t *testing.T, b *bucket) {
				t.Helper()
				b.srv.PutState(testBucket, snapshotKey(t, "ab", older), older)
				b.srv.PutState(testBucket, snapshotKey(t, "a-b", older), older)
			},
			// A listing of "a" rather than "a/" would find two objects:
			// more than the list limit.
			plan: func(p *Plan) { p.Prefix, p.Retention, p.ListLimit = "a", Retention{Count: 1}, 1 },
			want: stored(current, lineage, false),
			wantObjects: map[string][]byte{
				snapshotKey(t, "a", state):   state,
				snapshotKey(t, "ab", older):  older,
				snapshotKey(t, "a-b", older): older,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBucket(t)
			if tc.setup != nil {
				tc.setup(t, b)
			}
			dir := t.TempDir()
			plan := testPlan(dir)
			if tc.plan != nil {
				tc.plan(&plan)
			}
			src := tc.src
			if src == nil {
				src = stateSource(state)
			}
			before := time.Now()

			got, err := Take(t.Context(), src, b.store, plan)
			b.srv.DenyAccess(testBucket, false)
			requests := b.srv.Requests()

			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("Take() error = %v, want %v", err, tc.wantErr)
			}
			if tc.wantStage == "" && err != nil {
				t.Errorf("Take() error = %v, want none", err)
			}
			if stage := StageOf(err); stage != tc.wantStage {
				t.Errorf("StageOf(%v) = %q, want %q", err, stage, tc.wantStage)
			}
			if diff := cmp.Diff(tc.want, got, ignoreTakenAt); diff != "" {
				t.Errorf("Take() (-want +got):\n%s", diff)
			}
			if got.Current.SHA256 != "" && (got.Current.TakenAt.Before(before) || got.Current.TakenAt.After(time.Now())) {
				t.Errorf("the state was taken at %v, not during Take", got.Current.TakenAt)
			}
			if reached := requests != 0; reached != (tc.wantStage != StageSource && tc.wantStage != StageContent && got.Found) {
				t.Errorf("Take() sent the store %d requests, want some only for a state read whole", requests)
			}
			if diff := cmp.Diff(tc.wantObjects, b.objects(t)); diff != "" {
				t.Errorf("the bucket holds (-want +got):\n%s", diff)
			}
			if got.Stored {
				_, meta, _ := b.srv.Object(testBucket, Key(plan.Prefix, got.Current.Ref))
				sum := md5.Sum(tc.wantObjects[Key(plan.Prefix, got.Current.Ref)])
				if meta["x-cos-meta-md5"] != hex.EncodeToString(sum[:]) {
					t.Errorf("x-cos-meta-md5 = %q, want the state's MD5 %x", meta["x-cos-meta-md5"], sum)
				}
			}
			if n := entries(t, dir); n != 0 {
				t.Errorf("%d spool files left", n)
			}
		})
	}
}

func TestTakeTheSameStateTwice(t *testing.T) {
	b := newBucket(t)
	dir := t.TempDir()
	state := tfState(lineage, 3, "witty-gecko")
	first, err := Take(t.Context(), stateSource(state), b.store, testPlan(dir))
	if err != nil || !first.Stored {
		t.Fatalf("first Take() = stored %t, %v; want stored", first.Stored, err)
	}
	puts := countRequests(b.srv, "PUT")

	second, err := Take(t.Context(), stateSource(state), b.store, testPlan(dir))
	if err != nil {
		t.Fatalf("second Take() = %v", err)
	}
	want := Taken{Found: true, Current: first.Current, Lineage: lineage, Kept: []Snapshot{first.Current}}
	if diff := cmp.Diff(want, second, ignoreTakenAt); diff != "" {
		t.Errorf("second Take() (-want +got):\n%s", diff)
	}
	if n := countRequests(b.srv, "PUT"); n != puts {
		t.Errorf("the second Take wrote %d objects, want none", n-puts)
	}
	if diff := cmp.Diff(map[string][]byte{snapshotKey(t, testPrefix, state): state}, b.objects(t)); diff != "" {
		t.Errorf("the bucket holds (-want +got):\n%s", diff)
	}
	if n := entries(t, dir); n != 0 {
		t.Errorf("%d spool files left", n)
	}
}

// countRequests counts the requests of method the store received.
func countRequests(srv *costest.Server, method string) int {
	n := 0
	for _, r := range srv.RequestLog() {
		if r.Method == method {
			n++
		}
	}
	return n
}
