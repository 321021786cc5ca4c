package main

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	ten := ms(10, 1, 9, 2, 8, 3, 7, 4, 6, 5) // 1..10, shuffled
	cases := map[string]struct {
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		"no samples":             {samples: nil, p: 50, want: 0},
		"one sample":             {samples: ms(42), p: 95, want: 42 * time.Millisecond},
		"median of ten":          {samples: ten, p: 50, want: 5 * time.Millisecond},
		"p95 of ten":             {samples: ten, p: 95, want: 10 * time.Millisecond},
		"p90 of ten":             {samples: ten, p: 90, want: 9 * time.Millisecond},
		"p100 is the maximum":    {samples: ten, p: 100, want: 10 * time.Millisecond},
		"tiny p is the minimum":  {samples: ten, p: 0.1, want: 1 * time.Millisecond},
		"median of an odd count": {samples: ms(3, 1, 2), p: 50, want: 2 * time.Millisecond},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := percentile(tc.samples, tc.p); got != tc.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tc.samples, tc.p, got, tc.want)
			}
		})
	}
}

func TestPercentileLeavesSamplesAlone(t *testing.T) {
	samples := []time.Duration{3, 1, 2}
	percentile(samples, 50)
	if samples[0] != 3 || samples[1] != 1 || samples[2] != 2 {
		t.Errorf("percentile reordered its input: %v", samples)
	}
}
