package main

import (
	"context"
	"fmt"
	"time"
)

// rssWindow is what a sampler saw of a process's resident set size over a
// window: the largest, when, and the median of every sample.
type rssWindow struct {
	peak   int64
	at     time.Time
	median int64
}

// sampleRSS reads pid's resident set size every interval until ctx ends,
// and returns on done the window's peak, when it came, and the median: the
// peak of a window, which VmHWM (the process's peak since it started) does
// not tell apart from an earlier one, and a figure that one read at the
// end, in or out of a wave of probes, does not give.
func sampleRSS(ctx context.Context, pid int, interval time.Duration) <-chan rssWindow {
	done := make(chan rssWindow, 1)
	go func() {
		var (
			w       rssWindow
			samples []int64
		)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			if usage, err := readMemory(pid); err == nil {
				samples = append(samples, usage.rss)
				if usage.rss > w.peak {
					w.peak, w.at = usage.rss, time.Now()
				}
			}
			select {
			case <-ctx.Done():
				w.median = percentile(samples, 50)
				done <- w
				return
			case <-ticker.C:
			}
		}
	}()
	return done
}

// rssWindowNote says how large a window's RSS was: its median, and its
// peak and when it came, counted from the process's start and from the
// window's.
func rssWindowNote(w rssWindow, processStart, windowStart time.Time) string {
	if w.at.IsZero() {
		return "RSS not sampled"
	}
	return fmt.Sprintf("RSS sampled every second: median %s MiB, peak %s MiB, %s after the manager's start (%s into the window)",
		formatMiB(w.median), formatMiB(w.peak), formatSeconds(w.at.Sub(processStart)), formatSeconds(w.at.Sub(windowStart)))
}
