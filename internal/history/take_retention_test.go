package history

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/cos"
)

// putSnapshot stores state under its snapshot key as Take would, written
// age ago by the store's clock.
func (b *bucket) putSnapshot(t *testing.T, state []byte, age time.Duration) {
	t.Helper()
	b.srv.SetClock(func() time.Time { return time.Now().Add(-age) })
	defer b.srv.SetClock(time.Now)
	b.srv.PutState(testBucket, snapshotKey(t, testPrefix, state), state)
}

// TestTakeSerialsOneToFive takes serials 1 to 5 in turn, keeping 3: from
// the fourth on, each Take prunes the oldest.
func TestTakeSerialsOneToFive(t *testing.T) {
	b := newBucket(t)
	dir := t.TempDir()
	plan := testPlan(dir)
	plan.Retention = Retention{Count: 3}
	steps := []struct {
		serial     uint64
		wantKept   []uint64
		wantPruned int
	}{
		{serial: 1, wantKept: []uint64{1}},
		{serial: 2, wantKept: []uint64{2, 1}},
		{serial: 3, wantKept: []uint64{3, 2, 1}},
		{serial: 4, wantKept: []uint64{4, 3, 2}, wantPruned: 1},
		{serial: 5, wantKept: []uint64{5, 4, 3}, wantPruned: 1},
	}
	for _, step := range steps {
		got, err := Take(t.Context(), stateSource(tfState(lineage, step.serial, "witty-gecko")), b.store, plan)
		if err != nil {
			t.Fatalf("Take() of serial %d = %v", step.serial, err)
		}
		if !got.Stored || got.Pruned != step.wantPruned {
			t.Errorf("Take() of serial %d = stored %t, pruned %d; want stored, pruned %d", step.serial, got.Stored, got.Pruned, step.wantPruned)
		}
		if diff := cmp.Diff(step.wantKept, serials(got.Kept)); diff != "" {
			t.Errorf("Take() of serial %d kept serials (-want +got):\n%s", step.serial, diff)
		}
	}
	want := map[string][]byte{}
	for serial := uint64(3); serial <= 5; serial++ {
		state := tfState(lineage, serial, "witty-gecko")
		want[snapshotKey(t, testPrefix, state)] = state
	}
	if diff := cmp.Diff(want, b.objects(t)); diff != "" {
		t.Errorf("the bucket holds (-want +got):\n%s", diff)
	}
	if n := entries(t, dir); n != 0 {
		t.Errorf("%d spool files left", n)
	}
}

func TestTakeRetention(t *testing.T) {
	type existing struct {
		serial uint64
		age    time.Duration // by the store's clock; below 0 ahead of the plan's
	}
	cases := map[string]struct {
		existing  []existing
		take      uint64
		retention Retention
		// ahead is how far the plan's clock is ahead of the store's.
		ahead      time.Duration
		wantStored bool
		wantKept   []uint64
		wantPruned int
	}{
		"no bound keeps every snapshot": {
			existing:   []existing{{1, 3 * time.Minute}, {2, 2 * time.Minute}, {3, time.Minute}},
			take:       4,
			wantStored: true,
			wantKept:   []uint64{4, 3, 2, 1},
		},
		"a count keeps the newest": {
			existing:   []existing{{1, 4 * time.Minute}, {2, 3 * time.Minute}, {3, 2 * time.Minute}, {4, time.Minute}},
			take:       5,
			retention:  Retention{Count: 3},
			wantStored: true,
			wantKept:   []uint64{5, 4, 3},
			wantPruned: 2,
		},
		"a maximum age prunes the older snapshots": {
			existing:   []existing{{1, 48 * time.Hour}, {2, 12 * time.Hour}},
			take:       3,
			retention:  Retention{MaxAge: 24 * time.Hour},
			wantStored: true,
			wantKept:   []uint64{3, 2},
			wantPruned: 1,
		},
		"the age is counted from the plan's now": {
			existing:   []existing{{1, 0}, {2, 0}},
			take:       3,
			retention:  Retention{MaxAge: 24 * time.Hour},
			ahead:      25 * time.Hour,
			wantStored: true,
			wantKept:   []uint64{3},
			wantPruned: 2,
		},
		"the newest is kept however old, the state unchanged": {
			existing:   []existing{{1, 48 * time.Hour}, {2, 30 * time.Hour}},
			take:       2,
			retention:  Retention{MaxAge: 24 * time.Hour},
			wantKept:   []uint64{2},
			wantPruned: 1,
		},
		"the only snapshot is kept days after its age": {
			existing:  []existing{{1, 0}},
			take:      1,
			retention: Retention{MaxAge: 24 * time.Hour},
			ahead:     72 * time.Hour,
			wantKept:  []uint64{1},
		},
		"a store whose clock is ahead keeps the state just read": {
			existing:   []existing{{1, -30 * time.Second}},
			take:       2,
			retention:  Retention{Count: 1},
			wantStored: true,
			wantKept:   []uint64{2},
			wantPruned: 1,
		},
		"a count and a maximum age together": {
			existing:   []existing{{1, 50 * time.Hour}, {2, 3 * time.Hour}, {3, 2 * time.Hour}, {4, time.Hour}},
			take:       5,
			retention:  Retention{Count: 3, MaxAge: 24 * time.Hour},
			wantStored: true,
			wantKept:   []uint64{5, 4, 3},
			wantPruned: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBucket(t)
			for _, e := range tc.existing {
				b.putSnapshot(t, tfState(lineage, e.serial, "witty-gecko"), e.age)
			}
			dir := t.TempDir()
			plan := testPlan(dir)
			plan.Retention = tc.retention
			at := time.Now().Add(tc.ahead)
			plan.Now = func() time.Time { return at }

			got, err := Take(t.Context(), stateSource(tfState(lineage, tc.take, "witty-gecko")), b.store, plan)
			if err != nil {
				t.Fatalf("Take() = %v", err)
			}
			if got.Stored != tc.wantStored || got.Pruned != tc.wantPruned {
				t.Errorf("Take() = stored %t, pruned %d; want %t, %d", got.Stored, got.Pruned, tc.wantStored, tc.wantPruned)
			}
			// The state is taken at the plan's now, or just after the
			// snapshots a store whose clock is ahead dated later.
			ahead := slices.ContainsFunc(tc.existing, func(e existing) bool { return e.age < 0 })
			if got.Current.TakenAt.Before(at) || (!ahead && !got.Current.TakenAt.Equal(at)) {
				t.Errorf("the state was taken at %v, want %v", got.Current.TakenAt, at)
			}
			if diff := cmp.Diff(tc.wantKept, serials(got.Kept)); diff != "" {
				t.Errorf("kept serials (-want +got):\n%s", diff)
			}
			want := map[string][]byte{}
			for _, serial := range tc.wantKept {
				state := tfState(lineage, serial, "witty-gecko")
				want[snapshotKey(t, testPrefix, state)] = state
			}
			if diff := cmp.Diff(want, b.objects(t)); diff != "" {
				t.Errorf("the bucket holds (-want +got):\n%s", diff)
			}
			if n := entries(t, dir); n != 0 {
				t.Errorf("%d spool files left", n)
			}
		})
	}
}

// racingStore is the bucket's store, with what others do to the bucket
// just before a Take writes or deletes.
type racingStore struct {
	Store
	beforePut    func()
	beforeDelete func(n int) // n counts the deletes, from 1
	deletes      *int
}

func (s racingStore) Put(ctx context.Context, key string, body io.Reader, size int64, md5sum [16]byte) error {
	if s.beforePut != nil {
		s.beforePut()
	}
	return s.Store.Put(ctx, key, body, size, md5sum)
}

func (s racingStore) Delete(ctx context.Context, key string) error {
	*s.deletes++
	if s.beforeDelete != nil {
		s.beforeDelete(*s.deletes)
	}
	return s.Store.Delete(ctx, key)
}

func TestTakeRaces(t *testing.T) {
	state := tfState(lineage, 3, "witty-gecko")
	older := [][]byte{tfState(lineage, 1, "witty-gecko"), tfState(lineage, 2, "witty-gecko")}
	cases := map[string]struct {
		race         func(b *bucket, s *racingStore)
		wantStage    Stage
		wantErr      error
		wantKept     []uint64
		wantPruned   int
		wantInBucket []uint64
	}{
		"a snapshot another writer stored since the listing is kept, no error": {
			race: func(b *bucket, s *racingStore) {
				s.beforePut = func() { b.srv.PutState(testBucket, Key(testPrefix, snapshotRef(t, state)), state) }
			},
			wantKept:     []uint64{3},
			wantPruned:   2,
			wantInBucket: []uint64{3},
		},
		"a prune the store refuses keeps the snapshot stored": {
			race: func(b *bucket, s *racingStore) {
				s.beforeDelete = func(int) { b.srv.DenyAccess(testBucket, true) }
			},
			wantStage:    StageDestination,
			wantErr:      cos.ErrAccessDenied,
			wantKept:     []uint64{3, 2, 1},
			wantInBucket: []uint64{1, 2, 3},
		},
		"a prune refused halfway counts what it deleted": {
			race: func(b *bucket, s *racingStore) {
				s.beforeDelete = func(n int) { b.srv.DenyAccess(testBucket, n == 2) }
			},
			wantStage:    StageDestination,
			wantErr:      cos.ErrAccessDenied,
			wantKept:     []uint64{3, 1},
			wantPruned:   1,
			wantInBucket: []uint64{1, 3},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBucket(t)
			for i, s := range older {
				b.putSnapshot(t, s, time.Duration(len(older)-i)*time.Minute)
			}
			store := racingStore{Store: b.store, deletes: new(int)}
			tc.race(b, &store)
			dir := t.TempDir()
			plan := testPlan(dir)
			plan.Retention = Retention{Count: 1}

			got, err := Take(t.Context(), stateSource(state), store, plan)
			b.srv.DenyAccess(testBucket, false)

			if stage := StageOf(err); stage != tc.wantStage || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) || (tc.wantErr == nil && err != nil) {
				t.Errorf("Take() = %v (stage %q), want %v (stage %q)", err, stage, tc.wantErr, tc.wantStage)
			}
			if !got.Found || got.Current.Ref != snapshotRef(t, state) || got.Pruned != tc.wantPruned {
				t.Errorf("Take() = found %t, current %+v, pruned %d; want the state's snapshot, pruned %d", got.Found, got.Current.Ref, got.Pruned, tc.wantPruned)
			}
			if diff := cmp.Diff(tc.wantKept, serials(got.Kept)); diff != "" {
				t.Errorf("kept serials (-want +got):\n%s", diff)
			}
			want := map[string][]byte{}
			for _, serial := range tc.wantInBucket {
				s := tfState(lineage, serial, "witty-gecko")
				want[snapshotKey(t, testPrefix, s)] = s
			}
			if diff := cmp.Diff(want, b.objects(t)); diff != "" {
				t.Errorf("the bucket holds (-want +got):\n%s", diff)
			}
			if n := entries(t, dir); n != 0 {
				t.Errorf("%d spool files left", n)
			}
		})
	}
}
