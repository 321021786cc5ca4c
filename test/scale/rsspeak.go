package main

import (
	"context"
	"fmt"
	"time"
)

// rssPeak is the largest resident set size a sampler saw, and when.
type rssPeak struct {
	bytes int64
	at    time.Time
}

// sampleRSSPeak reads pid's resident set size every interval until ctx
// ends, and returns on done the largest it saw and when: the peak of a
// window, which VmHWM (the process's peak since it started) does not
// tell apart from an earlier one.
func sampleRSSPeak(ctx context.Context, pid int, interval time.Duration) <-chan rssPeak {
	done := make(chan rssPeak, 1)
	go func() {
		var peak rssPeak
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			if usage, err := readMemory(pid); err == nil && usage.rss > peak.bytes {
				peak = rssPeak{bytes: usage.rss, at: time.Now()}
			}
			select {
			case <-ctx.Done():
				done <- peak
				return
			case <-ticker.C:
			}
		}
	}()
	return done
}

// rssPeakNote says how large a window's peak RSS was and when it came,
// counted from the process's start and from the window's.
func rssPeakNote(peak rssPeak, processStart, windowStart time.Time) string {
	if peak.at.IsZero() {
		return "RSS not sampled"
	}
	return fmt.Sprintf("RSS sampled every second: peak %.1f MiB, %s after the manager's start (%s into the window)",
		float64(peak.bytes)/(1<<20), formatSeconds(peak.at.Sub(processStart)), formatSeconds(peak.at.Sub(windowStart)))
}
