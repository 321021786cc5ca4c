package testtools

import (
	"os"
	"testing"
)

func TestPeakResidentBytes(t *testing.T) {
	// The test binary itself holds at least a megabyte, and no machine a
	// terabyte.
	if got := PeakResidentBytes(t, os.Getpid()); got < 1<<20 || got > 1<<40 {
		t.Errorf("PeakResidentBytes(self) = %d, out of range", got)
	}
}
