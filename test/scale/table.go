package main

import (
	"fmt"
	"strings"
	"time"
)

// result is one scenario's row of the final table.
type result struct {
	// scenario is the scenario's name.
	scenario string
	// backends is the number of backends the scenario timed (created, or
	// resynced).
	backends int
	// elapsed is the time to all Ready, or to the end of a resync; 0 when
	// the scenario times something else (see timeText).
	elapsed time.Duration
	// timeText, when set, is printed instead of elapsed.
	timeText string
	// floor is the floor's time for the same work, for the ratio; 0 when
	// there is none.
	floor time.Duration
	// requests are the API requests of the operator (or of the floor).
	requests requestCounts
	// probes is the number of requests the state server saw for the
	// scenario's backends; -1 when not measured.
	probes int64
	// allProbes is the number of requests it saw for all backends; shown
	// when it differs from probes.
	allProbes int64
	// usage is the manager's memory and CPU; nil for the floor's rows.
	usage *managerUsage
	// notes are the scenario's own findings.
	notes []string
}

// managerUsage is the manager process's resources in a scenario.
type managerUsage struct {
	// peak and rss are VmHWM and VmRSS at the end of the scenario.
	peak, rss int64
	// cpu is the CPU time the process used during the scenario.
	cpu time.Duration
	// heap is the Go heap live after a garbage collection, read just
	// after rss; 0 when not read.
	heap int64
}

// tableHeader names the table's columns.
var tableHeader = []string{
	"scenario", "backends", "time", "objects/s", "vs floor", "operator API requests",
	"probes (per backend)", "peak RSS MiB", "RSS MiB", "CPU s", "notes",
}

// cells formats r as a row of the table.
func (r result) cells() []string {
	timeText, rate, ratio := r.timeText, "-", "-"
	if timeText == "" {
		timeText = "-"
	}
	if r.elapsed > 0 {
		if r.timeText == "" {
			timeText = formatSeconds(r.elapsed)
		}
		if r.backends > 0 {
			rate = fmt.Sprintf("%.1f", float64(r.backends)/r.elapsed.Seconds())
		}
		if r.floor > 0 {
			ratio = fmt.Sprintf("%.2fx", r.elapsed.Seconds()/r.floor.Seconds())
		}
	}
	requests := "-"
	if r.requests != nil {
		requests = formatRequests(r.requests)
	}
	probes := "-"
	if r.probes >= 0 {
		probes = fmt.Sprint(r.probes)
		if r.backends > 0 {
			probes += fmt.Sprintf(" (%.2f)", float64(r.probes)/float64(r.backends))
		}
		if r.allProbes > r.probes {
			probes += fmt.Sprintf(", all %d", r.allProbes)
		}
	}
	peak, rss, cpu := "-", "-", "-"
	if u := r.usage; u != nil {
		peak, rss = formatMiB(u.peak), formatMiB(u.rss)
		cpu = fmt.Sprintf("%.2f", u.cpu.Seconds())
	}
	notes := strings.Join(r.notes, "; ")
	if notes == "" {
		notes = "-"
	}
	return []string{r.scenario, fmt.Sprint(r.backends), timeText, rate, ratio, requests, probes, peak, rss, cpu, notes}
}

// formatSeconds prints d in seconds with a precision that suits its size.
func formatSeconds(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// formatMillis prints d in milliseconds.
func formatMillis(d time.Duration) string {
	return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
}

// formatMiB prints a number of bytes in MiB.
func formatMiB(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

// markdownTable renders a Markdown table. A "|" in a cell is escaped and
// a newline becomes a space, so that a cell cannot break the table.
func markdownTable(header []string, rows [][]string) string {
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			c = strings.ReplaceAll(c, "|", `\|`)
			c = strings.ReplaceAll(c, "\n", " ")
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	line(header)
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range rows {
		line(r)
	}
	return b.String()
}

// resultsTable renders the results as one Markdown table.
func resultsTable(results []result) string {
	rows := make([][]string, 0, len(results))
	for _, r := range results {
		rows = append(rows, r.cells())
	}
	return markdownTable(tableHeader, rows)
}

// legend explains the table's columns, printed under it.
const legend = `Legend:
- time: from the first create to the last backend seen Ready (Ready=True at the current generation) by the harness's watch;
  for restart-* and memory, from the manager's start to the end of its resync (controller_runtime_reconcile_total of the
  httpbackend controller has grown by at least the number of backends and its queue is empty); for floor-cold and cold-start,
  from the start of the floor or the manager; for apply-latency, per backend from its create returning to Ready.
- objects/s: backends / time. vs floor: time / the floor's time for the same work (burst: floor-burst, cold-start: floor-cold).
- operator API requests: the API server's apiserver_request_total over the scenario minus the harness's own requests, on
  the kinds of the API group (httpbackends, cosbackends, remotestates, statelocks, outputgrants, statehistories, staterestores),
  secrets, configmaps and events, WATCH left out; in parentheses the codes outside 2xx.
  They include the requests for every backend present (the periodic probes of the others), not only the row's.
  In floor-* rows these are the floor's requests.
- probes: requests the state server served during the scenario for the backends the row times, per backend in parentheses;
  "all" counts those for every backend present (periodic probes of the others) when it differs.
- peak RSS / RSS: the manager's VmHWM and VmRSS at the end of the scenario (restart-* and memory: after the resync has settled;
  their notes add the live heap: go_memstats_alloc_bytes right after a
  garbage collection the harness asks for once RSS is read). CPU s: the manager's user+system CPU time
  during the scenario.
- shards-*: two managers, one per shard (--watch-label-selector), instead of the one. peak RSS, RSS and CPU s sum both
  processes; the notes give each shard's, and the one manager's RSS in the burst or at-rest row of the run when it ran.
  Writes by manager come from the API server's audit log (each manager has an API user of its own). shards-relabel: time
  from the first relabel patch to shard b holding every moved backend and StateLock; its requests run from that patch to
  the end of the window after it; probes are the state server's requests on the moved states (all: on every state).
- floor: an in-process controller with the manager's concurrency doing only what the operator must do per backend: read the
  password Secret, create the ConfigMap and the credentials Secret it renders, read the state once (one GET through
  internal/stateclient, over one keep-alive transport for all backends) and send one merge patch of the status the API
  gives a new backend (the operator's, byte for byte: Ready, StateReachable, Locked LockNotChecked, locked, rendered with
  compatibleRunners, state).
  "stored object" in the notes is the last backend's size as JSON once Ready.
`
