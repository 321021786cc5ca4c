package main

// paceCollector reports whether the manager sets the collector's target
// by its work (see internal/gcpace): unless GOGC is set, in which case
// the runtime has read it already and keeps it. GOGC=100 keeps Go's
// default throughout, GOGC=off turns collection off as usual, and
// GOMEMLIMIT bounds the heap near the container's limit in every case.
func paceCollector(getenv func(string) string) bool {
	return getenv("GOGC") == ""
}
