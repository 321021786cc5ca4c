package main

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// coldBatch creates n fresh backends in namespaces of prefix while
// neither the manager nor the floor runs. It returns the batch and the
// number of backends that were there before.
func (h *harness) coldBatch(ctx context.Context, prefix string) (batch, int, error) {
	if _, err := h.stopManager(syscall.SIGTERM); err != nil {
		return batch{}, 0, err
	}
	already := h.tracker.count()
	b := planBatch(prefix, h.opts.n, h.opts.perNamespace)
	if err := createNamespaces(ctx, h.client, h.opts.workers, b.namespaces); err != nil {
		return batch{}, 0, err
	}
	if _, err := createBackends(ctx, h.client, h.opts.workers, b.backends, h.state.url, nil); err != nil {
		return batch{}, 0, err
	}
	return b, already, nil
}

// floorColdScenario: N fresh backends, then the floor starts.
func (h *harness) floorColdScenario(ctx context.Context) error {
	b, already, err := h.coldBatch(ctx, prefixFloorCold)
	if err != nil {
		return err
	}
	before, err := h.snap(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	f, err := startFloor(ctx, h.admin, h.opts.concurrency)
	if err != nil {
		return err
	}
	defer f.stop()
	last, err := h.tracker.waitReady(ctx, scenarioFloorCold, b.backends, h.opts.waitTimeout(len(b.backends)))
	if err != nil {
		return err
	}
	after, err := h.snap(ctx)
	if err != nil {
		return err
	}
	f.stop()
	requests, probes := since(before, after)
	h.floorCold = last.Sub(start)
	h.results = append(h.results, result{
		scenario: scenarioFloorCold, backends: len(b.backends), elapsed: h.floorCold,
		requests: requests, probes: probes[prefixFloorCold], allProbes: probes.total(),
		notes: []string{fmt.Sprintf("%d other backends present", already), h.storedSizeNote(ctx, b.backends)},
	})
	return h.deleteFloorBatch(ctx, b)
}

// coldStartScenario: N fresh backends, then the manager starts.
func (h *harness) coldStartScenario(ctx context.Context) error {
	b, already, err := h.coldBatch(ctx, prefixCold)
	if err != nil {
		return err
	}
	before, err := h.snap(ctx)
	if err != nil {
		return err
	}
	m, err := h.startManager(ctx)
	if err != nil {
		return err
	}
	last, err := h.tracker.waitReady(ctx, scenarioColdStart, b.backends, h.opts.waitTimeout(len(b.backends)+already))
	if err != nil {
		return err
	}
	after, err := h.snap(ctx)
	if err != nil {
		return err
	}
	usage, err := m.usage(0)
	if err != nil {
		return err
	}
	requests, probes := since(before, after)
	h.results = append(h.results, result{
		scenario: scenarioColdStart, backends: len(b.backends), elapsed: last.Sub(m.started), floor: h.floorCold,
		requests: requests, probes: probes[prefixCold], allProbes: probes.total(), usage: usage,
		notes: append([]string{fmt.Sprintf("%d other backends present; time from the process's start", already),
			workersNote(m), durationsSince(ctx, m, durations{}), h.storedSizeNote(ctx, b.backends)}, h.probeFailures()...),
	})
	return nil
}
