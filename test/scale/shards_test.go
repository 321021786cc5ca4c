package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestPlanShards(t *testing.T) {
	type want struct {
		Namespaces     []string
		ShardOf        map[string]string
		Relabel        []types.NamespacedName
		Initial, Final map[string]int
	}
	nn := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	cases := map[string]struct {
		n, perNamespace, relabel int
		want                     want
	}{
		"namespaces alternate, the first of a moves": {
			n: 8, perNamespace: 2, relabel: 3,
			want: want{
				Namespaces: []string{"shards-0000", "shards-0001", "shards-0002", "shards-0003"},
				ShardOf:    map[string]string{"shards-0000": "a", "shards-0001": "b", "shards-0002": "a", "shards-0003": "b"},
				Relabel:    []types.NamespacedName{nn("shards-0000", "hb-00000"), nn("shards-0000", "hb-00001"), nn("shards-0002", "hb-00004")},
				Initial:    map[string]int{"a": 4, "b": 4},
				Final:      map[string]int{"a": 1, "b": 7},
			},
		},
		"namespaces of at most half the backends, so that both shards get some": {
			n: 4, perNamespace: 100, relabel: 1,
			want: want{
				Namespaces: []string{"shards-0000", "shards-0001"},
				ShardOf:    map[string]string{"shards-0000": "a", "shards-0001": "b"},
				Relabel:    []types.NamespacedName{nn("shards-0000", "hb-00000")},
				Initial:    map[string]int{"a": 2, "b": 2},
				Final:      map[string]int{"a": 1, "b": 3},
			},
		},
		"relabel capped at shard a's backends": {
			n: 3, perNamespace: 100, relabel: 1000,
			want: want{
				Namespaces: []string{"shards-0000", "shards-0001"},
				ShardOf:    map[string]string{"shards-0000": "a", "shards-0001": "b"},
				Relabel:    []types.NamespacedName{nn("shards-0000", "hb-00000"), nn("shards-0000", "hb-00001")},
				Initial:    map[string]int{"a": 2, "b": 1},
				Final:      map[string]int{"b": 3},
			},
		},
		"one backend": {
			n: 1, perNamespace: 100, relabel: 5,
			want: want{
				Namespaces: []string{"shards-0000"},
				ShardOf:    map[string]string{"shards-0000": "a"},
				Relabel:    []types.NamespacedName{nn("shards-0000", "hb-00000")},
				Initial:    map[string]int{"a": 1},
				Final:      map[string]int{"b": 1},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := planShards(prefixShards, tc.n, tc.perNamespace, tc.relabel)
			var got want
			got.Namespaces, got.ShardOf, got.Relabel = p.namespaces, p.shardOf, p.relabel
			got.Initial, got.Final = p.count()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("planShards(%d, %d, %d) mismatch (-want +got):\n%s", tc.n, tc.perNamespace, tc.relabel, diff)
			}
			if len(p.backends) != tc.n {
				t.Errorf("planShards planned %d backends, want %d", len(p.backends), tc.n)
			}
		})
	}
}

func TestSplitNote(t *testing.T) {
	got := planShards(prefixShards, 250, 100, 10).splitNote()
	if want := "split by namespace: a 150 in 2 namespaces, b 100 in 1 namespace"; got != want {
		t.Errorf("splitNote = %q, want %q", got, want)
	}
}

func TestShardSelector(t *testing.T) {
	if got, want := shardSelector("b"), "sharding.fluxcd.io/key in (b)"; got != want {
		t.Errorf("shardSelector = %q, want %q", got, want)
	}
}

func TestCheckHoldings(t *testing.T) {
	nn := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }
	want := map[types.NamespacedName]string{nn("x"): "a", nn("y"): "b", nn("z"): "b"}
	cases := map[string]struct {
		held   map[string][]types.NamespacedName
		want   holdingsReport
		wantOK bool
	}{
		"each held by its shard only": {
			held:   map[string][]types.NamespacedName{"a": {nn("x")}, "b": {nn("y"), nn("z")}},
			want:   holdingsReport{Backends: 3, Held: map[string]int{"a": 1, "b": 2}},
			wantOK: true,
		},
		"one held by none, one by both, one by the wrong shard": {
			held: map[string][]types.NamespacedName{"a": {nn("y"), nn("z")}, "b": {nn("z")}},
			want: holdingsReport{
				Backends: 3, Held: map[string]int{"a": 2, "b": 1},
				Unheld: []string{"ns/x"}, Both: []string{"ns/z (a,b)"}, Misplaced: []string{"ns/y (on a, want b)"},
			},
		},
		"a backend of no shard held": {
			held: map[string][]types.NamespacedName{"a": {nn("x"), nn("unlabelled")}, "b": {nn("y"), nn("z")}},
			want: holdingsReport{
				Backends: 3, Held: map[string]int{"a": 1, "b": 2},
				Strangers: []string{"ns/unlabelled"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := checkHoldings(want, tc.held)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("checkHoldings mismatch (-want +got):\n%s", diff)
			}
			if got.ok() != tc.wantOK {
				t.Errorf("ok() = %v, want %v", got.ok(), tc.wantOK)
			}
		})
	}
}

func TestHoldingsReportString(t *testing.T) {
	r := holdingsReport{Backends: 3, Held: map[string]int{"a": 2, "b": 1}, Unheld: []string{"ns/x"}, Both: []string{"ns/z (a,b)"}}
	want := "holdings FAIL: 3 backends, a 2, b 1; 1 held by none, 1 by both, 0 by the wrong shard, 0 not of the batch (ns/x) (ns/z (a,b))"
	if got := r.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestAdoptionLeft(t *testing.T) {
	k1 := types.NamespacedName{Namespace: "ns", Name: "k1"}
	k2 := types.NamespacedName{Namespace: "ns", Name: "k2"}
	keys := []types.NamespacedName{k1, k2}
	lockIDs := map[types.NamespacedName]string{k1: "id1", k2: "id2"}
	goodBackend := backendView{Shard: "b", Ready: true, Protected: true, Locked: "True"}
	goodLock := func(id string) stateLockView { return stateLockView{Shard: "b", LockID: id, Ready: true} }
	allOnB := map[string]shardScrape{"a": {}, "b": {held: keys}}
	cases := map[string]struct {
		scrapes    map[string]shardScrape
		backends   map[types.NamespacedName]backendView
		locks      map[types.NamespacedName]stateLockView
		reconciles int64
		want       string
	}{
		"adopted": {
			scrapes: allOnB, backends: map[types.NamespacedName]backendView{k1: goodBackend, k2: goodBackend},
			locks: map[types.NamespacedName]stateLockView{k1: goodLock("id1"), k2: goodLock("id2")}, reconciles: 2,
		},
		"nothing yet": {
			scrapes:  map[string]shardScrape{"a": {held: keys}, "b": {}},
			backends: map[types.NamespacedName]backendView{k1: {Shard: "a", Ready: true, Protected: true, Locked: "True"}},
			want: "series on b 0/2, series still on a 2, backends on b Ready, protected and locked 0/2, " +
				"StateLocks on b Ready with their lock 0/2, StateLock reconciles on b 0/2",
		},
		"a StateLock stalled, a backend unprotected, its lock taken again": {
			scrapes:  allOnB,
			backends: map[types.NamespacedName]backendView{k1: goodBackend, k2: {Shard: "b", Ready: true, Locked: "True"}},
			locks: map[types.NamespacedName]stateLockView{
				k1: {Shard: "b", LockID: "id1", Reason: "ReferenceOnOtherShard"}, k2: goodLock("id3"),
			},
			reconciles: 5,
			want:       "backends on b Ready, protected and locked 1/2, StateLocks on b Ready with their lock 0/2",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := adoptionLeft(keys, tc.scrapes, tc.backends, tc.locks, lockIDs, tc.reconciles); got != tc.want {
				t.Errorf("adoptionLeft = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLockedLeft(t *testing.T) {
	k := types.NamespacedName{Namespace: "ns", Name: "k"}
	keys := []types.NamespacedName{k}
	good := backendView{Shard: "a", Ready: true, Protected: true, Locked: "True"}
	cases := map[string]struct {
		backends map[types.NamespacedName]backendView
		locks    map[types.NamespacedName]stateLockView
		want     string
	}{
		"locked": {
			backends: map[types.NamespacedName]backendView{k: good},
			locks:    map[types.NamespacedName]stateLockView{k: {Shard: "a", LockID: "id", Ready: true}},
		},
		"the StateLock waits for the backend to learn its server": {
			backends: map[types.NamespacedName]backendView{k: {Shard: "a", Ready: true, Protected: true, Locked: "Unknown"}},
			locks:    map[types.NamespacedName]stateLockView{k: {Shard: "a", Reason: "Progressing"}},
			want:     "StateLocks Ready with a lock 0/1, backends Ready, protected and locked 0/1",
		},
		"not seen yet": {want: "StateLocks Ready with a lock 0/1, backends Ready, protected and locked 0/1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := lockedLeft(keys, tc.backends, tc.locks, "a"); got != tc.want {
				t.Errorf("lockedLeft = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLockChecksNote(t *testing.T) {
	cases := map[string]struct {
		s    lockTrafficSummary
		want string
	}{
		"one manager": {
			s:    lockTrafficSummary{Paths: 2, Sum: lockTraffic{Refused: 7}, MinRefused: 3, MaxRefused: 4},
			want: "lock checks in the window after the adoption pass: 1.17 per lock per interval",
		},
		"two managers on one lock": {
			s:    lockTrafficSummary{Paths: 2, Sum: lockTraffic{Refused: 9}, MinRefused: 3, MaxRefused: 6, Doubled: 1},
			want: "lock checks in the window after the adoption FAIL: 1.50 per lock per interval",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := lockChecksNote(tc.s, 3); !strings.HasPrefix(got, tc.want) {
				t.Errorf("lockChecksNote = %q, want it to start with %q", got, tc.want)
			}
		})
	}
}
