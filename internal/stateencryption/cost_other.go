//go:build !linux

package stateencryption

import "time"

// measureCost runs f and returns its wall time: where the manager does
// not run (it is built for Linux, see cost_linux.go), a thread's CPU
// clock is not read, and the wall time bounds the CPU time from above.
func measureCost(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}
