package main

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestRSSPeakNote(t *testing.T) {
	start := time.Unix(1000, 0)
	cases := map[string]struct {
		peak rssPeak
		want string
	}{
		"never sampled": {want: "RSS not sampled"},
		"a peak in the window": {
			peak: rssPeak{bytes: 300 << 20, at: start.Add(300 * time.Second)},
			want: "RSS sampled every second: peak 300.0 MiB, 300.0s after the manager's start (100.0s into the window)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := rssPeakNote(tc.peak, start, start.Add(200*time.Second)); got != tc.want {
				t.Errorf("rssPeakNote() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSampleRSSPeakReadsThisProcess(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	peak := sampleRSSPeak(ctx, os.Getpid(), time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	cancel()
	if got := <-peak; got.bytes <= 0 || got.at.IsZero() {
		t.Errorf("sampleRSSPeak() of this process = %+v, want a positive RSS and its time", got)
	}
}
