package testtools

import "runtime"

// AllocatedBy returns the bytes the process allocated on the heap while fn
// ran (runtime.MemStats.TotalAlloc, which counts every allocation, freed
// or not, of every goroutine: a test server's too). Tests that bound it
// must not run in parallel with others.
func AllocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
