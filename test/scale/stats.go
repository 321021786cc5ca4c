package main

import (
	"cmp"
	"math"
	"slices"
)

// percentile returns the p-th percentile (0 < p <= 100) of samples by the
// nearest-rank method: the smallest sample that at least p percent of
// the samples are less than or equal to (p=50 is the lower of the two
// middle samples when they are even). It returns 0 for no samples.
func percentile[T cmp.Ordered](samples []T, p float64) T {
	if len(samples) == 0 || p <= 0 {
		var zero T
		return zero
	}
	sorted := slices.Sorted(slices.Values(samples))
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}
