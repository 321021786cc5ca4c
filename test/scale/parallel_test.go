package main

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParallelCallsEveryIndexOnce(t *testing.T) {
	cases := map[string]struct{ workers, n int }{
		"more items than workers": {workers: 3, n: 100},
		"more workers than items": {workers: 8, n: 2},
		"no items":                {workers: 4, n: 0},
		"zero workers means one":  {workers: 0, n: 5},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var (
				mu   sync.Mutex
				seen = map[int]int{}
			)
			err := parallel(t.Context(), tc.workers, tc.n, func(_ context.Context, i int) error {
				mu.Lock()
				defer mu.Unlock()
				seen[i]++
				return nil
			})
			if err != nil {
				t.Fatalf("parallel: %v", err)
			}
			want := map[int]int{}
			for i := range tc.n {
				want[i] = 1
			}
			if diff := cmp.Diff(want, seen); diff != "" {
				t.Errorf("calls per index mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParallelStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	var (
		mu    sync.Mutex
		calls int
	)
	err := parallel(t.Context(), 1, 100, func(_ context.Context, i int) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if i == 9 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("parallel error = %v, want %v", err, boom)
	}
	if calls != 10 {
		t.Errorf("parallel made %d calls with one worker, want 10: it went on after the error", calls)
	}
}
