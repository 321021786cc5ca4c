package main

import (
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/types"
)

// Methods of the Terraform http backend protocol's lock requests, as the
// reference state server takes them (its default lockMethod and
// unlockMethod).
const (
	methodLock   = "LOCK"
	methodUnlock = "UNLOCK"
)

// lockTraffic counts the state server's requests on one state path by what
// they did to its lock. A backend whose lockAddress is its address (as the
// shards scenario sets it) has its lock requests on the same path as its
// state reads.
type lockTraffic struct {
	// Reads are GETs of the state: the backend's probes.
	Reads int64
	// Taken are LOCKs answered 200: a lock taken, by a StateLock or by a
	// lock check that found the state free.
	Taken int64
	// Refused are LOCKs answered 409 or 423: a lock check that found the
	// lock held. With the reference server this is how a StateLock checks
	// that it still holds its lock (the conflict names the holder).
	Refused int64
	// Unlocks are UNLOCKs, whatever their answer.
	Unlocks int64
	// Other are the other requests: other methods, LOCKs answered
	// otherwise.
	Other int64
}

// add returns t with one request of method answered with status counted.
func (t lockTraffic) add(method string, status int) lockTraffic {
	switch {
	case method == http.MethodGet:
		t.Reads++
	case method == methodLock && status == http.StatusOK:
		t.Taken++
	case method == methodLock && (status == http.StatusConflict || status == http.StatusLocked):
		t.Refused++
	case method == methodUnlock:
		t.Unlocks++
	default:
		t.Other++
	}
	return t
}

// plus returns t plus u.
func (t lockTraffic) plus(u lockTraffic) lockTraffic {
	return lockTraffic{Reads: t.Reads + u.Reads, Taken: t.Taken + u.Taken, Refused: t.Refused + u.Refused,
		Unlocks: t.Unlocks + u.Unlocks, Other: t.Other + u.Other}
}

// minus returns t minus u.
func (t lockTraffic) minus(u lockTraffic) lockTraffic {
	return lockTraffic{Reads: t.Reads - u.Reads, Taken: t.Taken - u.Taken, Refused: t.Refused - u.Refused,
		Unlocks: t.Unlocks - u.Unlocks, Other: t.Other - u.Other}
}

// total is the number of requests t counts.
func (t lockTraffic) total() int64 { return t.Reads + t.Taken + t.Refused + t.Unlocks + t.Other }

// lockTrafficSummary is the traffic on a set of state paths between two
// readings of the state server's counts.
type lockTrafficSummary struct {
	// Paths is the number of paths summed.
	Paths int
	// Sum is the traffic of all of them.
	Sum lockTraffic
	// MinRefused and MaxRefused are the fewest and the most lock checks
	// (Refused) one path got.
	MinRefused, MaxRefused int64
	// Unchecked and Doubled count the paths whose checks fell outside
	// [minChecks, maxChecks] (see summarizeLockTraffic).
	Unchecked, Doubled int
}

// summarizeLockTraffic sums the traffic on paths between before and after
// (per-path counts; a path missing from either reads as no request). A
// path with fewer than minChecks lock checks counts as Unchecked, one with
// more than maxChecks as Doubled.
func summarizeLockTraffic(paths []string, before, after map[string]lockTraffic, minChecks, maxChecks int64) lockTrafficSummary {
	s := lockTrafficSummary{Paths: len(paths)}
	for i, p := range paths {
		d := after[p].minus(before[p])
		s.Sum = s.Sum.plus(d)
		if i == 0 || d.Refused < s.MinRefused {
			s.MinRefused = d.Refused
		}
		s.MaxRefused = max(s.MaxRefused, d.Refused)
		switch {
		case d.Refused < minChecks:
			s.Unchecked++
		case d.Refused > maxChecks:
			s.Doubled++
		}
	}
	return s
}

// checksPerInterval is the mean number of lock checks per path and per
// interval, over intervals intervals.
func (s lockTrafficSummary) checksPerInterval(intervals int) float64 {
	if s.Paths == 0 || intervals == 0 {
		return 0
	}
	return float64(s.Sum.Refused) / float64(s.Paths) / float64(intervals)
}

// checkWindow bounds the lock checks one lock may get in a window of
// intervals probe intervals and their 10% jitter, as the at-rest window
// is: at least one (the lock is checked by some manager), and fewer than
// two per interval (two managers checking it would make at least two per
// interval).
func checkWindow(intervals int) (minChecks, maxChecks int64) {
	return 1, int64(2*intervals) - 1
}

// lockTrafficNote prints the traffic on the relabelled states: the locks
// taken and released (both should be 0) and the other requests.
func lockTrafficNote(t lockTraffic) string {
	return fmt.Sprintf("LOCK taken %d (target 0), UNLOCK %d (target 0), lock checks %d, state reads %d, other %d",
		t.Taken, t.Unlocks, t.Refused, t.Reads, t.Other)
}

// statePaths returns the state paths of keys (see newBackend), in order.
func statePaths(keys []types.NamespacedName) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, statePath(k))
	}
	return out
}
