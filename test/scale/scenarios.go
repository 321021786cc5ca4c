package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// runScenarios runs the selected scenarios in order, adding a row per
// scenario to h.results. It stops at the first error.
func (h *harness) runScenarios(ctx context.Context) error {
	steps := map[string]func(context.Context) error{
		scenarioFloorBurst:     h.floorBurstScenario,
		scenarioBurst:          h.burstScenario,
		scenarioAtRest:         h.atRestScenario,
		scenarioRestartSigterm: func(ctx context.Context) error { return h.restartScenario(ctx, syscall.SIGTERM) },
		scenarioRestartSigkill: func(ctx context.Context) error { return h.restartScenario(ctx, syscall.SIGKILL) },
		scenarioFloorCold:      h.floorColdScenario,
		scenarioColdStart:      h.coldStartScenario,
		scenarioMemory:         h.memoryScenario,
		scenarioKillBurst:      h.killBurstScenario,
		scenarioApplyLatency:   h.applyLatencyScenario,
		scenarioShards:         h.shardsScenario,
	}
	for _, name := range h.opts.scenarios {
		log.Printf("scenario %s", name)
		start := time.Now()
		if err := steps[name](ctx); err != nil {
			return fmt.Errorf("scenario %s: %w", name, err)
		}
		log.Printf("scenario %s done in %s", name, time.Since(start).Round(time.Second))
	}
	return nil
}

// ensureManager starts the manager when it is stopped.
func (h *harness) ensureManager(ctx context.Context) error {
	if h.manager != nil {
		return nil
	}
	_, err := h.startManager(ctx)
	return err
}

// ensureBackends gives the scenarios that need them N Ready backends and
// a running manager: burst's, or, when burst did not run, N created the
// same way without a row.
func (h *harness) ensureBackends(ctx context.Context) error {
	if err := h.ensureManager(ctx); err != nil {
		return err
	}
	if h.primary != nil {
		return nil
	}
	log.Printf("creating %d backends for the scenarios that need them", h.opts.n)
	b := planBatch(prefixBurst, h.opts.n, h.opts.perNamespace)
	if err := createNamespaces(ctx, h.client, h.opts.workers, b.namespaces); err != nil {
		return err
	}
	if _, err := createBackends(ctx, h.client, h.opts.workers, b.backends, h.state.url, nil); err != nil {
		return err
	}
	if _, err := h.tracker.waitReady(ctx, "setup", b.backends, h.opts.waitTimeout(len(b.backends))); err != nil {
		return err
	}
	h.primary = b.backends
	return nil
}

// floorBurstScenario: the floor handles N backends created in a burst.
func (h *harness) floorBurstScenario(ctx context.Context) error {
	if _, err := h.stopManager(syscall.SIGTERM); err != nil {
		return err
	}
	b := planBatch(prefixFloorBurst, h.opts.n, h.opts.perNamespace)
	if err := createNamespaces(ctx, h.client, h.opts.workers, b.namespaces); err != nil {
		return err
	}
	f, err := startFloor(ctx, h.admin, h.opts.concurrency)
	if err != nil {
		return err
	}
	defer f.stop()
	before, err := h.snap(ctx)
	if err != nil {
		return err
	}
	first, createdIn, last, err := h.burstOf(ctx, scenarioFloorBurst, b)
	if err != nil {
		return err
	}
	after, err := h.snap(ctx)
	if err != nil {
		return err
	}
	f.stop()
	requests, probes := since(before, after)
	h.floorBurst = last.Sub(first)
	h.results = append(h.results, result{
		scenario: scenarioFloorBurst, backends: len(b.backends), elapsed: h.floorBurst,
		requests: requests, probes: probes[prefixFloorBurst], allProbes: probes.total(),
		notes: []string{createdNote(createdIn), h.storedSizeNote(ctx, b.backends)},
	})
	return h.deleteFloorBatch(ctx, b)
}

// deleteFloorBatch deletes what the floor and the harness created in a
// floor batch's namespaces, so that the manager never sees it.
func (h *harness) deleteFloorBatch(ctx context.Context, b batch) error {
	if err := deleteNamespaceContents(ctx, h.client, h.opts.workers, b.namespaces); err != nil {
		return err
	}
	// Wait for the tracker to see them go, so that counts stay right.
	deadline := time.Now().Add(time.Minute)
	for {
		if h.tracker.present(b.backends) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the floor's backends were deleted but are still watched after a minute")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// burstScenario: the manager runs idle, N backends are created in a
// burst.
func (h *harness) burstScenario(ctx context.Context) error {
	m, b, start, err := h.managedBatch(ctx, prefixBurst, h.opts.n)
	if err != nil {
		return err
	}
	durationsBefore, err := m.durations(ctx)
	if err != nil {
		return err
	}
	profileDone := h.startCPUProfile(ctx, m)
	first, createdIn, last, err := h.burstOf(ctx, scenarioBurst, b)
	if err != nil {
		return err
	}
	requests, probes, usage, err := h.endMeasuring(ctx, m, start)
	if err != nil {
		return err
	}
	h.primary = b.backends
	h.results = append(h.results, result{
		scenario: scenarioBurst, backends: len(b.backends), elapsed: last.Sub(first), floor: h.floorBurst,
		requests: requests, probes: probes[prefixBurst], allProbes: probes.total(), usage: usage,
		notes: append([]string{createdNote(createdIn), durationsSince(ctx, m, durationsBefore), h.storedSizeNote(ctx, b.backends)}, h.probeFailures()...),
	})
	if err := <-profileDone; err != nil {
		return err
	}
	return h.saveHeapProfiles(ctx, m, "burst")
}

// atRestScenario: N Ready backends and the running manager, for three
// probe intervals and their jitter.
func (h *harness) atRestScenario(ctx context.Context) error {
	if err := h.ensureBackends(ctx); err != nil {
		return err
	}
	m := h.manager
	window := h.opts.restWindow()
	start, err := h.startMeasuring(ctx, m)
	if err != nil {
		return err
	}
	log.Printf("at rest for %s", window)
	windowStart := time.Now()
	sampling, stopSampling := context.WithCancel(ctx)
	rss := sampleRSS(sampling, m.pid(), time.Second)
	select {
	case <-ctx.Done():
		stopSampling()
		return ctx.Err()
	case <-time.After(window):
	}
	stopSampling()
	rssNote := rssWindowNote(<-rss, m.started, windowStart)
	requests, probeCounts, usage, err := h.endMeasuring(ctx, m, start)
	if err != nil {
		return err
	}
	// After the RSS is read: what the manager holds at rest.
	if err := h.saveHeapProfiles(ctx, m, scenarioAtRest); err != nil {
		return err
	}
	probes := probeCounts.total()
	writes, reads := requestTotals(requests)
	perProbe := "-"
	if probes > 0 {
		perProbe = fmt.Sprintf("%.2f", float64(reads)/float64(probes))
	}
	backends := h.tracker.count()
	h.results = append(h.results, result{
		scenario: scenarioAtRest, backends: backends, timeText: "window " + formatSeconds(window),
		requests: requests, probes: probes, usage: usage,
		notes: append([]string{
			fmt.Sprintf("writes %d (target 0), reads %d, reads/probe %s, probes/backend/interval %.2f",
				writes, reads, perProbe, float64(probes)/float64(backends)/restIntervals),
			rssNote,
		}, h.probeFailures()...),
	})
	return nil
}

// createdNote says when the harness's last create of a burst returned:
// a time to Ready close to it means the controller kept up with the
// creates.
func createdNote(d time.Duration) string {
	return "last create returned at " + formatSeconds(d)
}

// probeFailures is a note on the state server's failed requests so far,
// or nothing when there were none.
func (h *harness) probeFailures() []string {
	if n := h.state.failures.Load(); n > 0 {
		return []string{fmt.Sprintf("state server answered %d requests with 401, 403 or 5xx so far", n)}
	}
	return nil
}

// startCPUProfile starts, when -pprof is set, a CPU profile of the
// manager of -pprof-seconds; the channel gets its outcome.
func (h *harness) startCPUProfile(ctx context.Context, m *managerProcess) <-chan error {
	done := make(chan error, 1)
	if h.opts.pprofDir == "" {
		done <- nil
		return done
	}
	file := filepath.Join(h.opts.pprofDir, "burst-cpu.pprof")
	go func() {
		path := fmt.Sprintf("/debug/pprof/profile?seconds=%d", h.opts.pprofSeconds)
		err := m.saveProfile(ctx, path, file)
		if err == nil {
			h.profiles = append(h.profiles, "go tool pprof -top "+h.profileBinary()+" "+file)
		}
		done <- err
	}()
	return done
}

// saveHeapProfiles saves, when -pprof is set, the manager's heap and
// allocs profiles, named after the scenario (burst, at-rest).
func (h *harness) saveHeapProfiles(ctx context.Context, m *managerProcess, scenario string) error {
	if h.opts.pprofDir == "" {
		return nil
	}
	for _, p := range []struct{ name, index string }{{"heap", "inuse_space"}, {"allocs", "alloc_space"}} {
		file := filepath.Join(h.opts.pprofDir, scenario+"-"+p.name+".pprof")
		if err := m.saveProfile(ctx, "/debug/pprof/"+p.name, file); err != nil {
			return err
		}
		h.profiles = append(h.profiles, "go tool pprof -top -sample_index="+p.index+" "+h.profileBinary()+" "+file)
	}
	return nil
}

// profileBinary copies the manager binary next to the profiles, once, and
// returns its path: pprof needs it to name functions once the work
// directory is gone.
func (h *harness) profileBinary() string {
	dst := filepath.Join(h.opts.pprofDir, "manager")
	if _, err := os.Stat(dst); err == nil {
		return dst
	}
	b, err := os.ReadFile(h.managerBin)
	if err == nil {
		err = os.WriteFile(dst, b, 0o700)
	}
	if err != nil {
		log.Printf("copying the manager binary next to the profiles: %v", err)
		return h.managerBin
	}
	return dst
}
