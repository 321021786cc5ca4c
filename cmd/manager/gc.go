package main

// defaultGCPercent is the garbage collector's target the manager sets
// unless GOGC is set: the heap may grow by half of what is live before a
// collection, where Go's default lets it double. A manager's heap is
// mostly what it holds for every object it watches, so the default's
// headroom is most of its resident memory at rest; at 50 it is a third
// less, for more frequent collections (docs/performance.md measures
// both). GOGC=100 restores Go's default, GOGC=off turns collection off as
// usual, and GOMEMLIMIT still bounds the heap near the container's limit.
const defaultGCPercent = 50

// gcPercent returns the collector's target the manager sets, and false
// when GOGC is set and the runtime has read it already.
func gcPercent(getenv func(string) string) (int, bool) {
	if getenv("GOGC") != "" {
		return 0, false
	}
	return defaultGCPercent, true
}
