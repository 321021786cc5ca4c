package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// machineInfo describes where the benchmark ran.
type machineInfo struct {
	cpus      int
	cpuModel  string
	memTotal  int64 // bytes; 0 when unknown
	goVersion string
}

// readMachineInfo reads the CPU count, the CPU model from /proc/cpuinfo
// and the memory from /proc/meminfo; what cannot be read stays empty.
func readMachineInfo() machineInfo {
	m := machineInfo{cpus: runtime.NumCPU(), goVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.cpuModel = parseCPUModel(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.memTotal = parseMemTotal(string(b))
	}
	return m
}

// parseCPUModel returns the first "model name" of /proc/cpuinfo, or "".
func parseCPUModel(cpuinfo string) string {
	for line := range strings.SplitSeq(cpuinfo, "\n") {
		key, value, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

// parseMemTotal returns MemTotal of /proc/meminfo in bytes, or 0.
func parseMemTotal(meminfo string) int64 {
	for line := range strings.SplitSeq(meminfo, "\n") {
		value, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(strings.TrimSpace(value), " ")
		kb, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// String prints the machine on one line.
func (m machineInfo) String() string {
	model := m.cpuModel
	if model == "" {
		model = "unknown CPU"
	}
	mem := "unknown memory"
	if m.memTotal > 0 {
		mem = fmt.Sprintf("%.1f GiB memory", float64(m.memTotal)/(1<<30))
	}
	return fmt.Sprintf("%d CPUs (%s), %s, %s %s/%s", m.cpus, model, mem, m.goVersion, runtime.GOOS, runtime.GOARCH)
}
