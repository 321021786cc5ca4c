package main

import (
	"context"
	"fmt"
	"log"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// shardManager is the manager of one shard in the shards scenario.
type shardManager struct {
	shard string
	*managerProcess
}

// shardArgs are the flags of the manager of shard: the one manager's
// (managerArgs), its shard's label selector and a leader election ID of
// its own (unused while leader election is off, as here, but two shards
// must never share one).
func shardArgs(kubeconfig string, ports managerPorts, o options, shard string) []string {
	return append(managerArgs(kubeconfig, ports, o),
		"--watch-label-selector="+shardSelector(shard),
		"--leader-election-id=backend-operator-shard-"+shard)
}

// startShards starts one manager per shard, each with endpoints on ports
// of its own and its own log (manager-shard-<shard>.log), and waits until
// the HttpBackend workers of each run. h.shards holds them, for close.
func (h *harness) startShards(ctx context.Context) ([]*shardManager, error) {
	for _, shard := range shardNames {
		p, err := freePorts(ctx, 3)
		if err != nil {
			return nil, err
		}
		ports := managerPorts{health: p[0], metrics: p[1], pprof: p[2]}
		logPath := filepath.Join(h.logDir, "manager-shard-"+shard+".log")
		m, err := startManager(h.managerBin, logPath, shardArgs(h.shardKubeconfigs[shard], ports, h.opts, shard), ports)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", shard, err)
		}
		h.shards = append(h.shards, &shardManager{shard: shard, managerProcess: m})
	}
	for _, m := range h.shards {
		if err := m.waitWorkers(ctx, 2*time.Minute); err != nil {
			return nil, fmt.Errorf("shard %s: %w", m.shard, err)
		}
	}
	return h.shards, nil
}

// stopShards stops the shards' managers that run, with SIGTERM.
func (h *harness) stopShards() {
	for _, m := range h.shards {
		if !m.running() {
			continue
		}
		if _, err := m.stop(syscall.SIGTERM); err != nil {
			log.Printf("stopping the manager of shard %s: %v", m.shard, err)
		}
	}
	h.shards = nil
}

// scrape reads the shard manager's metrics.
func (m *shardManager) scrape(ctx context.Context) (shardScrape, error) {
	families, err := m.metrics(ctx, shardScrapeFamilies()...)
	if err != nil {
		return shardScrape{}, fmt.Errorf("shard %s: %w", m.shard, err)
	}
	return shardScrapeFrom(families), nil
}

// scrapeShards reads the metrics of every shard's manager, by shard.
func scrapeShards(ctx context.Context, shards []*shardManager) (map[string]shardScrape, error) {
	out := make(map[string]shardScrape, len(shards))
	for _, m := range shards {
		s, err := m.scrape(ctx)
		if err != nil {
			return nil, err
		}
		out[m.shard] = s
	}
	return out, nil
}

// shardsMeasure is what a phase of the shards scenario records before it
// acts: the API server's and the state server's counters, the shards'
// metrics and their CPU times.
type shardsMeasure struct {
	before  snapshot
	scrapes map[string]shardScrape
	cpu     map[string]time.Duration
	// audit is where the audit log's events of the phase begin.
	audit int64
}

// startShardsMeasure records the counters, the shards' metrics and CPU
// times.
func (h *harness) startShardsMeasure(ctx context.Context, shards []*shardManager) (shardsMeasure, error) {
	offset, err := h.audit.offset()
	if err != nil {
		return shardsMeasure{}, err
	}
	before, err := h.snap(ctx)
	if err != nil {
		return shardsMeasure{}, err
	}
	scrapes, err := scrapeShards(ctx, shards)
	if err != nil {
		return shardsMeasure{}, err
	}
	cpu := map[string]time.Duration{}
	for _, m := range shards {
		if cpu[m.shard], err = readCPU(m.pid()); err != nil {
			return shardsMeasure{}, err
		}
	}
	return shardsMeasure{before: before, scrapes: scrapes, cpu: cpu, audit: offset}, nil
}

// shardsOutcome is what a phase of the shards scenario measured.
type shardsOutcome struct {
	// requests are the API requests of both managers; probes the state
	// server's requests.
	requests requestCounts
	probes   probeCounts
	// usage is the managers' memory and CPU summed; perShard each one's.
	usage    *managerUsage
	perShard map[string]*managerUsage
	// scrapes are the shards' metrics at the end.
	scrapes map[string]shardScrape
	// writes are each shard's writes, from the audit log.
	writes map[string]auditWrites
}

// endShardsMeasure reads what startShardsMeasure began: the requests and
// probes since, each manager's CPU time since and memory now, and their
// metrics.
func (h *harness) endShardsMeasure(ctx context.Context, shards []*shardManager, start shardsMeasure) (shardsOutcome, error) {
	after, err := h.snap(ctx)
	if err != nil {
		return shardsOutcome{}, err
	}
	scrapes, err := scrapeShards(ctx, shards)
	if err != nil {
		return shardsOutcome{}, err
	}
	out := shardsOutcome{usage: &managerUsage{}, perShard: map[string]*managerUsage{}, scrapes: scrapes}
	for _, m := range shards {
		u, err := m.usage(start.cpu[m.shard])
		if err != nil {
			return shardsOutcome{}, err
		}
		out.perShard[m.shard] = u
		out.usage.peak += u.peak
		out.usage.rss += u.rss
		out.usage.cpu += u.cpu
	}
	out.requests, out.probes = since(start.before, after)
	if out.writes, err = h.audit.writesSince(start.audit); err != nil {
		return shardsOutcome{}, err
	}
	return out, nil
}

// shardUsageNote prints each shard's memory and CPU: "shard a: peak 61.2
// MiB, RSS 60.0 MiB, CPU 1.20s; shard b: ...".
func shardUsageNote(perShard map[string]*managerUsage) string {
	parts := make([]string, 0, len(shardNames))
	for _, s := range shardNames {
		if u := perShard[s]; u != nil {
			parts = append(parts, fmt.Sprintf("shard %s: peak %s MiB, RSS %s MiB, CPU %.2fs", s, formatMiB(u.peak), formatMiB(u.rss), u.cpu.Seconds()))
		}
	}
	return strings.Join(parts, "; ")
}

// oneManagerNote prints the one manager's memory in the row of scenario
// of results, for comparison with the shards': "one manager (burst row,
// 1000 backends): peak 80.1 MiB, RSS 79.0 MiB"; "" when that row is not
// there.
func oneManagerNote(results []result, scenario string) string {
	for _, r := range results {
		if r.scenario == scenario && r.usage != nil {
			return fmt.Sprintf("one manager (%s row, %d backends): peak %s MiB, RSS %s MiB",
				scenario, r.backends, formatMiB(r.usage.peak), formatMiB(r.usage.rss))
		}
	}
	return ""
}
