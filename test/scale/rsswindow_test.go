package main

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestRSSWindowNote(t *testing.T) {
	start := time.Unix(1000, 0)
	cases := map[string]struct {
		window rssWindow
		want   string
	}{
		"never sampled": {want: "RSS not sampled"},
		"a peak in the window": {
			window: rssWindow{peak: 300 << 20, at: start.Add(300 * time.Second), median: 180 << 20},
			want:   "RSS sampled every second: median 180.0 MiB, peak 300.0 MiB, 300.0s after the manager's start (100.0s into the window)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := rssWindowNote(tc.window, start, start.Add(200*time.Second)); got != tc.want {
				t.Errorf("rssWindowNote() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMedianOfRSSSamples(t *testing.T) {
	cases := map[string]struct {
		samples []int64
		want    int64
	}{
		"none":                           {want: 0},
		"one":                            {samples: []int64{7}, want: 7},
		"odd, unsorted":                  {samples: []int64{9, 1, 5}, want: 5},
		"even: the lower middle":         {samples: []int64{4, 1, 3, 2}, want: 2},
		"a wave's peak does not move it": {samples: []int64{180, 181, 300, 179, 182}, want: 181},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := percentile(tc.samples, 50); got != tc.want {
				t.Errorf("percentile(%v, 50) = %d, want %d", tc.samples, got, tc.want)
			}
		})
	}
}

func TestSampleRSSReadsThisProcess(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	window := sampleRSS(ctx, os.Getpid(), time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	cancel()
	if got := <-window; got.peak <= 0 || got.at.IsZero() || got.median <= 0 || got.median > got.peak {
		t.Errorf("sampleRSS() of this process = %+v, want a positive RSS, its time, and a median at most the peak", got)
	}
}
