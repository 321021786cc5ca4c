package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseProcStatus(t *testing.T) {
	cases := map[string]struct {
		text    string
		want    memoryUsage
		wantErr bool
	}{
		"a running process": {
			text: "Name:\tmanager\nVmPeak:\t 1300000 kB\nVmHWM:\t   81920 kB\nVmRSS:\t   40960 kB\nThreads:\t12\n",
			want: memoryUsage{rss: 40960 * 1024, peak: 81920 * 1024},
		},
		"a zombie has no memory lines": {text: "Name:\tmanager\nState:\tZ (zombie)\n", wantErr: true},
		"another unit":                 {text: "VmHWM:\t 8 MB\nVmRSS:\t 4 MB\n", wantErr: true},
		"not a number":                 {text: "VmHWM:\t x kB\nVmRSS:\t 4 kB\n", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseProcStatus(tc.text)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseProcStatus error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(memoryUsage{})); diff != "" {
				t.Errorf("parseProcStatus mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseProcStatCPU(t *testing.T) {
	// Fields 14 and 15 (utime, stime) are 250 and 120 ticks.
	const rest = " S 1 100 100 0 -1 4194560 1000 0 0 0 250 120 0 0 20 0 12 0 4000 1300000000 10000 18446744073709551615"
	cases := map[string]struct {
		text    string
		want    time.Duration
		wantErr bool
	}{
		"plain name":            {text: "4242 (manager)" + rest, want: 3700 * time.Millisecond},
		"name with ) and space": {text: "4242 (a) b (c))" + rest, want: 3700 * time.Millisecond},
		"no parentheses":        {text: "4242 manager" + rest, wantErr: true},
		"cut short":             {text: "4242 (manager) S 1 100", wantErr: true},
		"not a number":          {text: "4242 (manager) S 1 100 100 0 -1 4194560 1000 0 0 0 x 120 0", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseProcStatCPU(tc.text)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseProcStatCPU error = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("parseProcStatCPU = %v, want %v", got, tc.want)
			}
		})
	}
}
