package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// ignoresSIGINT says whether the process ignores SIGINT, from the SigIgn
// mask of /proc/pid/status: a process started in the background of a
// shell without job control does, and so do the processes it starts.
func ignoresSIGINT(pid int) bool {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	Expect(err).NotTo(HaveOccurred())
	for line := range strings.Lines(string(status)) {
		if mask, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			bits, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
			Expect(err).NotTo(HaveOccurred())
			return bits&(1<<(uint(syscall.SIGINT)-1)) != 0
		}
	}
	Fail("no SigIgn line in /proc/" + strconv.Itoa(pid) + "/status")
	return false
}

// descendant is a process started, directly or not, by another.
type descendant struct {
	pid  int
	name string
	// start is its start time, in clock ticks since boot: a new process
	// that reuses pid has another.
	start string
}

// descendants returns every process below pid, read from /proc.
func descendants(pid int) []descendant {
	entries, err := os.ReadDir("/proc")
	Expect(err).NotTo(HaveOccurred())
	children := map[int][]descendant{}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, d, ok := readStat(child)
		if ok {
			children[ppid] = append(children[ppid], d)
		}
	}
	var out []descendant
	queue := []int{pid}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, d := range children[next] {
			out = append(out, d)
			queue = append(queue, d.pid)
		}
	}
	return out
}

// running says whether the process still runs (a zombie does not).
func (d descendant) running() bool {
	_, now, ok := readStat(d.pid)
	return ok && now.start == d.start
}

// readStat reads the parent, the name and the start time of pid from
// /proc/pid/stat; ok is false when it is gone or a zombie.
func readStat(pid int) (ppid int, d descendant, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, d, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	stat := string(data)
	open, closing := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || closing < open {
		return 0, d, false
	}
	fields := strings.Fields(stat[closing+1:])
	// fields[0] is the state, fields[1] the parent, fields[19] the start
	// time (field 22 of proc(5)).
	if len(fields) < 20 || fields[0] == "Z" {
		return 0, d, false
	}
	ppid, err = strconv.Atoi(fields[1])
	if err != nil {
		return 0, d, false
	}
	return ppid, descendant{pid: pid, name: stat[open+1 : closing], start: fields[19]}, true
}
