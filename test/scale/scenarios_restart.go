package main

import (
	"context"
	"fmt"
	"log"
	"syscall"
	"time"
)

// restartOutcome is what a measured restart of the manager saw.
type restartOutcome struct {
	// backends is the number of backends it resynced.
	backends int
	// resync is the time from the process's start to the end of its
	// resync.
	resync time.Duration
	// requests and probes are the API requests and state server requests
	// from the start to the end of the resync.
	requests requestCounts
	probes   int64
	// usage is the CPU time to the end of the resync, and the memory
	// after the settle time that follows.
	usage *managerUsage
}

// measuredRestart starts the manager (stopped) and measures its resync:
// time, API requests, probes and CPU to the end of the resync, then RSS
// after -settle.
func (h *harness) measuredRestart(ctx context.Context) (restartOutcome, error) {
	backends := h.tracker.count()
	before, err := h.snap(ctx)
	if err != nil {
		return restartOutcome{}, err
	}
	m, err := h.startManager(ctx)
	if err != nil {
		return restartOutcome{}, err
	}
	done, err := m.waitResync(ctx, backends, h.opts.waitTimeout(backends))
	if err != nil {
		return restartOutcome{}, err
	}
	after, err := h.snap(ctx)
	if err != nil {
		return restartOutcome{}, err
	}
	cpu, err := readCPU(m.pid())
	if err != nil {
		return restartOutcome{}, err
	}
	log.Printf("resync of %d backends done in %s; settling for %s", backends, done.Sub(m.started).Round(time.Millisecond), h.opts.settle)
	select {
	case <-ctx.Done():
		return restartOutcome{}, ctx.Err()
	case <-time.After(h.opts.settle):
	}
	mem, err := readMemory(m.pid())
	if err != nil {
		return restartOutcome{}, err
	}
	heap, err := m.liveHeap(ctx)
	if err != nil {
		return restartOutcome{}, err
	}
	requests, probes := since(before, after)
	return restartOutcome{
		backends: backends, resync: done.Sub(m.started), requests: requests, probes: probes.total(),
		usage: &managerUsage{peak: mem.peak, rss: mem.rss, cpu: cpu, heap: heap},
	}, nil
}

// restartScenario: stop the manager with sig while its backends are
// Ready, start it again and measure the resync.
func (h *harness) restartScenario(ctx context.Context, sig syscall.Signal) error {
	if err := h.ensureBackends(ctx); err != nil {
		return err
	}
	took, err := h.stopManager(sig)
	if err != nil {
		return err
	}
	out, err := h.measuredRestart(ctx)
	if err != nil {
		return err
	}
	writes, reads := requestTotals(out.requests)
	name, signal := scenarioRestartSigterm, "SIGTERM"
	if sig == syscall.SIGKILL {
		name, signal = scenarioRestartSigkill, "SIGKILL"
	}
	h.results = append(h.results, result{
		scenario: name, backends: out.backends, elapsed: out.resync,
		requests: out.requests, probes: out.probes, usage: out.usage,
		notes: append([]string{
			fmt.Sprintf("%s: exited in %s; writes %d (target 0), reads %d; RSS %s after the resync, live heap %s MiB",
				signal, formatSeconds(took), writes, reads, formatSeconds(h.opts.settle), formatMiB(out.usage.heap)),
		}, h.probeFailures()...),
	})
	return nil
}

// memoryScenario: the manager's memory with many Secrets and ConfigMaps
// it has nothing to do with. It restarts the manager once without them
// (the baseline, with the same backends) and once with them, and
// measures RSS the same way after each resync.
func (h *harness) memoryScenario(ctx context.Context) error {
	if err := h.ensureBackends(ctx); err != nil {
		return err
	}
	if _, err := h.stopManager(syscall.SIGTERM); err != nil {
		return err
	}
	log.Printf("memory: baseline restart without unrelated objects")
	base, err := h.measuredRestart(ctx)
	if err != nil {
		return err
	}
	log.Printf("memory: creating %d unrelated Secrets and %d unrelated ConfigMaps", h.opts.unrelatedSecrets, h.opts.unrelatedConfigMaps)
	start := time.Now()
	if err := createUnrelated(ctx, h.client, h.opts.workers, h.opts.unrelatedSecrets, h.opts.unrelatedConfigMaps); err != nil {
		return err
	}
	created := time.Since(start)
	if _, err := h.stopManager(syscall.SIGTERM); err != nil {
		return err
	}
	with, err := h.measuredRestart(ctx)
	if err != nil {
		return err
	}
	h.results = append(h.results, result{
		scenario: scenarioMemory, backends: with.backends, elapsed: with.resync,
		requests: with.requests, probes: with.probes, usage: with.usage,
		notes: []string{fmt.Sprintf("with %d unrelated Secrets and %d ConfigMaps of 1 KiB (created in %s): live heap %s MiB; "+
			"without them, same backends: RSS %s MiB, peak %s MiB, live heap %s MiB, resync %s",
			h.opts.unrelatedSecrets, h.opts.unrelatedConfigMaps, formatSeconds(created), formatMiB(with.usage.heap),
			formatMiB(base.usage.rss), formatMiB(base.usage.peak), formatMiB(base.usage.heap), formatSeconds(base.resync))},
	})
	return nil
}
