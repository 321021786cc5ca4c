package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestLockTrafficAdd(t *testing.T) {
	cases := map[string]struct {
		method string
		status int
		want   lockTraffic
	}{
		"a probe's read":            {method: "GET", status: 404, want: lockTraffic{Reads: 1}},
		"a lock taken":              {method: "LOCK", status: 200, want: lockTraffic{Taken: 1}},
		"a lock check, 423":         {method: "LOCK", status: 423, want: lockTraffic{Refused: 1}},
		"a lock check, 409":         {method: "LOCK", status: 409, want: lockTraffic{Refused: 1}},
		"a lock refused for auth":   {method: "LOCK", status: 403, want: lockTraffic{Other: 1}},
		"a release":                 {method: "UNLOCK", status: 200, want: lockTraffic{Unlocks: 1}},
		"a release refused":         {method: "UNLOCK", status: 409, want: lockTraffic{Unlocks: 1}},
		"a write of the state":      {method: "POST", status: 200, want: lockTraffic{Other: 1}},
		"a line without any method": {status: 0, want: lockTraffic{Other: 1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, lockTraffic{}.add(tc.method, tc.status)); diff != "" {
				t.Errorf("add(%q, %d) mismatch (-want +got):\n%s", tc.method, tc.status, diff)
			}
		})
	}
}

func TestLockTrafficArithmetic(t *testing.T) {
	a := lockTraffic{Reads: 5, Taken: 1, Refused: 4, Unlocks: 2, Other: 1}
	b := lockTraffic{Reads: 2, Refused: 1, Unlocks: 1}
	if diff := cmp.Diff(lockTraffic{Reads: 3, Taken: 1, Refused: 3, Unlocks: 1, Other: 1}, a.minus(b)); diff != "" {
		t.Errorf("minus mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(lockTraffic{Reads: 7, Taken: 1, Refused: 5, Unlocks: 3, Other: 1}, a.plus(b)); diff != "" {
		t.Errorf("plus mismatch (-want +got):\n%s", diff)
	}
	if got := a.total(); got != 13 {
		t.Errorf("total = %d, want 13", got)
	}
}

func TestSummarizeLockTraffic(t *testing.T) {
	paths := []string{"/state/p1", "/state/p2", "/state/p3"}
	before := map[string]lockTraffic{"/state/p1": {Refused: 10, Reads: 10}, "/state/p2": {Refused: 10}}
	cases := map[string]struct {
		after map[string]lockTraffic
		want  lockTrafficSummary
	}{
		"each lock checked about once an interval": {
			after: map[string]lockTraffic{"/state/p1": {Refused: 13, Reads: 13}, "/state/p2": {Refused: 14}, "/state/p3": {Refused: 3}},
			want:  lockTrafficSummary{Paths: 3, Sum: lockTraffic{Refused: 10, Reads: 3}, MinRefused: 3, MaxRefused: 4},
		},
		"one lock checked by two managers, one by none": {
			after: map[string]lockTraffic{"/state/p1": {Refused: 16, Reads: 10}, "/state/p2": {Refused: 10}, "/state/p3": {Refused: 3}},
			want:  lockTrafficSummary{Paths: 3, Sum: lockTraffic{Refused: 9}, MinRefused: 0, MaxRefused: 6, Unchecked: 1, Doubled: 1},
		},
		"a lock released and taken again": {
			after: map[string]lockTraffic{"/state/p1": {Refused: 13, Reads: 10, Taken: 1, Unlocks: 1}, "/state/p2": {Refused: 13}, "/state/p3": {Refused: 3}},
			want:  lockTrafficSummary{Paths: 3, Sum: lockTraffic{Refused: 9, Taken: 1, Unlocks: 1}, MinRefused: 3, MaxRefused: 3},
		},
	}
	minChecks, maxChecks := checkWindow(3)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := summarizeLockTraffic(paths, before, tc.after, minChecks, maxChecks)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("summarizeLockTraffic mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckWindow(t *testing.T) {
	// One manager checks at most 4 times in 3.3 intervals, two at least 6.
	minChecks, maxChecks := checkWindow(3)
	if minChecks != 1 || maxChecks != 5 {
		t.Errorf("checkWindow(3) = %d, %d, want 1, 5", minChecks, maxChecks)
	}
}

func TestChecksPerInterval(t *testing.T) {
	cases := map[string]struct {
		s         lockTrafficSummary
		intervals int
		want      float64
	}{
		"100 locks, 3 intervals": {s: lockTrafficSummary{Paths: 100, Sum: lockTraffic{Refused: 375}}, intervals: 3, want: 1.25},
		"no lock":                {s: lockTrafficSummary{}, intervals: 3, want: 0},
		"no interval":            {s: lockTrafficSummary{Paths: 1, Sum: lockTraffic{Refused: 3}}, want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.s.checksPerInterval(tc.intervals); got != tc.want {
				t.Errorf("checksPerInterval = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStatePathsMatchNewBackend(t *testing.T) {
	keys := []types.NamespacedName{{Namespace: "shards-0000", Name: "hb-00001"}, {Namespace: "shards-0001", Name: "hb-00100"}}
	got := statePaths(keys)
	for i, key := range keys {
		if want := newBackend(key, "").Spec.Address; got[i] != want {
			t.Errorf("statePaths[%d] = %q, want the path of the backend's address %q", i, got[i], want)
		}
	}
}
