package history

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// snap is the snapshot of serial of lineage l, taken hoursAgo before now.
func snap(l string, serial uint64, hoursAgo int) Snapshot {
	return Snapshot{Ref: NewRef(l, serial, hashA), TakenAt: now.Add(-time.Duration(hoursAgo) * time.Hour)}
}

var now = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

// serials are the serials of snapshots, in order.
func serials(snapshots []Snapshot) []uint64 {
	var out []uint64
	for _, s := range snapshots {
		out = append(out, s.Serial)
	}
	return out
}

func TestPrune(t *testing.T) {
	five := []Snapshot{snap(lineage, 3, 30), snap(lineage, 5, 1), snap(lineage, 1, 50), snap(lineage, 4, 20), snap(lineage, 2, 40)}
	tests := []struct {
		name      string
		snapshots []Snapshot
		retain    Retention
		wantKeep  []uint64
		wantPrune []uint64
	}{
		{name: "no bound keeps every snapshot, newest first", snapshots: five, wantKeep: []uint64{5, 4, 3, 2, 1}},
		{name: "a count keeps the newest", snapshots: five, retain: Retention{Count: 3}, wantKeep: []uint64{5, 4, 3}, wantPrune: []uint64{2, 1}},
		{name: "an age prunes the older", snapshots: five, retain: Retention{MaxAge: 24 * time.Hour}, wantKeep: []uint64{5, 4}, wantPrune: []uint64{3, 2, 1}},
		{name: "both bounds apply", snapshots: five, retain: Retention{Count: 1, MaxAge: 24 * time.Hour}, wantKeep: []uint64{5}, wantPrune: []uint64{4, 3, 2, 1}},
		{
			name:      "the newest is kept however old",
			snapshots: []Snapshot{snap(lineage, 9, 1000), snap(lineage, 8, 2000)},
			retain:    Retention{MaxAge: time.Hour},
			wantKeep:  []uint64{9}, wantPrune: []uint64{8},
		},
		{
			name:      "newest by time, whatever the lineage: a new lineage's serial 1 is the newest",
			snapshots: []Snapshot{snap(lineage, 40, 5), snap("new-lineage", 1, 1)},
			retain:    Retention{Count: 1},
			wantKeep:  []uint64{1}, wantPrune: []uint64{40},
		},
		{name: "nothing to prune in an empty history", retain: Retention{Count: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keep, prune := Prune(tt.snapshots, tt.retain, now)
			if diff := cmp.Diff(tt.wantKeep, serials(keep)); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantPrune, serials(prune)); diff != "" {
				t.Errorf("pruned (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSkipped(t *testing.T) {
	tests := []struct {
		name              string
		previous, current Ref
		want              []uint64
	}{
		{name: "the next serial skipped nothing", previous: NewRef(lineage, 4, hashA), current: NewRef(lineage, 5, hashA)},
		{name: "serials between two reads were skipped", previous: NewRef(lineage, 4, hashA), current: NewRef(lineage, 8, hashA), want: []uint64{5, 6, 7}},
		{name: "a new lineage skipped nothing nameable", previous: NewRef(lineage, 4, hashA), current: NewRef("other", 9, hashA)},
		{name: "a serial that went down skipped nothing", previous: NewRef(lineage, 9, hashA), current: NewRef(lineage, 3, hashA)},
		{name: "the same serial skipped nothing", previous: NewRef(lineage, 9, hashA), current: NewRef(lineage, 9, hashA)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Skipped(tt.previous, tt.current)); diff != "" {
				t.Errorf("Skipped (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSkippedIsBounded(t *testing.T) {
	got := Skipped(NewRef(lineage, 1, hashA), NewRef(lineage, 1_000_000, hashA))
	if len(got) != maxSkipped || got[0] != 1_000_000-maxSkipped || got[len(got)-1] != 999_999 {
		t.Errorf("Skipped of a million serials: %d serials from %d to %d, want the newest %d", len(got), got[0], got[len(got)-1], maxSkipped)
	}
}

func TestDue(t *testing.T) {
	kept := []Snapshot{snap(lineage, 4, 2), snap(lineage, 5, 1)}
	tests := []struct {
		name    string
		current Ref
		want    bool
	}{
		{name: "a snapshot already kept is not copied again", current: NewRef(lineage, 5, hashA)},
		{name: "a new serial is due", current: NewRef(lineage, 6, hashA), want: true},
		{name: "the same serial with other content is due", current: NewRef(lineage, 5, "b"+hashA[1:]), want: true},
		{name: "another lineage is due", current: NewRef("other", 5, hashA), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Due(kept, tt.current); got != tt.want {
				t.Errorf("Due() = %t, want %t", got, tt.want)
			}
		})
	}
}
