//go:build linux

package stateencryption

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// measureCost runs f and returns the CPU time it took: the goroutine is
// locked to its OS thread while f runs, and the thread's CPU clock
// (CLOCK_THREAD_CPUTIME_ID) is read before and after, so that time spent
// waiting for a CPU is not counted, and time spent by other goroutines
// is not either. It falls back to wall time should the clock fail.
func measureCost(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	wall := time.Now()
	start, startErr := threadCPUTime()
	f()
	end, endErr := threadCPUTime()
	if startErr != nil || endErr != nil {
		return time.Since(wall)
	}
	return end - start
}

// threadCPUTime is the CPU time the calling thread has used.
func threadCPUTime() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, err
	}
	return time.Duration(ts.Nano()), nil
}
