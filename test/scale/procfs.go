package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the kernel's USER_HZ (sysconf(_SC_CLK_TCK)), the unit of
// the CPU times in /proc/PID/stat. It is 100 on every Linux architecture
// Go supports.
const clockTicks = 100

// memoryUsage is a process's resident memory, from /proc/PID/status.
type memoryUsage struct {
	// rss is the resident set size now (VmRSS), in bytes.
	rss int64
	// peak is the largest resident set size so far (VmHWM), in bytes.
	peak int64
}

// parseProcStatus reads VmRSS and VmHWM from the text of /proc/PID/status,
// where they are written in kB ("VmHWM:\t   12345 kB").
func parseProcStatus(text string) (memoryUsage, error) {
	var (
		m          memoryUsage
		rss, peak  bool
		parseBytes = func(field, value string) (int64, error) {
			num, unit, _ := strings.Cut(strings.TrimSpace(value), " ")
			if unit != "kB" {
				return 0, fmt.Errorf("%s: unit %q, want kB", field, unit)
			}
			kb, err := strconv.ParseInt(num, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", field, err)
			}
			return kb * 1024, nil
		}
	)
	for line := range strings.SplitSeq(text, "\n") {
		field, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var err error
		switch field {
		case "VmRSS":
			m.rss, err = parseBytes(field, value)
			rss = true
		case "VmHWM":
			m.peak, err = parseBytes(field, value)
			peak = true
		}
		if err != nil {
			return memoryUsage{}, err
		}
	}
	if !rss || !peak {
		return memoryUsage{}, errors.New("no VmRSS or VmHWM line: the process may be a zombie")
	}
	return m, nil
}

// parseProcStatCPU returns the CPU time (user plus system) from the text
// of /proc/PID/stat. The command name (second field) is in parentheses
// and may itself hold spaces and parentheses, so the fields are counted
// from the last ')': utime and stime are fields 14 and 15 of the line.
func parseProcStatCPU(text string) (time.Duration, error) {
	end := strings.LastIndexByte(text, ')')
	if end < 0 {
		return 0, errors.New("no command name in parentheses")
	}
	fields := strings.Fields(text[end+1:])
	// fields[0] is field 3 (state), so field k is fields[k-3].
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("%d fields after the command name, want at least %d", len(fields), stime+1)
	}
	var ticks int64
	for _, i := range []int{utime, stime} {
		v, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("field %d: %w", i+3, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// readMemory reads the resident memory of process pid.
func readMemory(pid int) (memoryUsage, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memoryUsage{}, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	m, err := parseProcStatus(string(b))
	if err != nil {
		return memoryUsage{}, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	return m, nil
}

// readCPU reads the CPU time process pid has used so far.
func readCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	d, err := parseProcStatCPU(string(b))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	return d, nil
}
