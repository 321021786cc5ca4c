package testtools

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PeakResidentBytes returns the peak resident set size (VmHWM) of process
// pid, from /proc, and fails the test when it cannot be read.
func PeakResidentBytes(t T, pid int) int64 {
	t.Helper()
	path := fmt.Sprintf("/proc/%d/status", pid)
	status, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the peak resident memory: %v", err)
		return 0
	}
	for line := range strings.Lines(string(status)) {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			t.Fatalf("parsing %q of %s: %v", strings.TrimSpace(line), path, err)
			return 0
		}
		return kb << 10
	}
	t.Fatalf("no VmHWM line in %s", path)
	return 0
}
