package main

import (
	"context"
	"fmt"
	"log"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Rows of the shards scenario, one per phase.
const (
	rowShardsBurst   = "shards-burst"
	rowShardsAtRest  = "shards-at-rest"
	rowShardsRelabel = "shards-relabel"
)

// shardsScenario: the one manager stops, and two managers, one per shard
// (--watch-label-selector), share the API server and the state server. N
// backends are created in a burst, half on each shard by namespace
// (shards-burst, against floor-burst, which runs first when it has not);
// both rest for the at-rest window (shards-at-rest); then StateLocks take
// the locks of -shard-relabel backends of shard a, and those backends and
// their StateLocks are relabelled to shard b (shards-relabel).
func (h *harness) shardsScenario(ctx context.Context) error {
	if h.floorBurst == 0 {
		log.Printf("shards: running %s first, for the ratio", scenarioFloorBurst)
		if err := h.floorBurstScenario(ctx); err != nil {
			return fmt.Errorf("%s: %w", scenarioFloorBurst, err)
		}
	}
	if _, err := h.stopManager(syscall.SIGTERM); err != nil {
		return err
	}
	plan := planShards(prefixShards, h.opts.n, h.opts.perNamespace, h.opts.shardRelabel)
	if err := createNamespaces(ctx, h.client, h.opts.workers, plan.namespaces); err != nil {
		return err
	}
	log.Printf("shards: starting the managers of shards %s and %s", shardA, shardB)
	shards, err := h.startShards(ctx)
	defer h.stopShards()
	if err != nil {
		return err
	}
	if err := h.shardsBurst(ctx, plan, shards); err != nil {
		return err
	}
	if err := h.shardsAtRest(ctx, plan, shards); err != nil {
		return err
	}
	return h.shardsRelabel(ctx, plan, shards)
}

// shardsBurst creates the plan's backends, labelled for their shard, in a
// burst and waits until all are Ready.
func (h *harness) shardsBurst(ctx context.Context, plan shardPlan, shards []*shardManager) error {
	start, err := h.startShardsMeasure(ctx, shards)
	if err != nil {
		return err
	}
	labels := func(key types.NamespacedName) map[string]string { return shardLabels(plan.initialShard(key)) }
	first, err := createBackends(ctx, h.client, h.opts.workers, plan.backends, h.state.url, labels)
	if err != nil {
		return err
	}
	createdIn := time.Since(first)
	last, err := h.tracker.waitReady(ctx, rowShardsBurst, plan.backends, h.opts.waitTimeout(len(plan.backends)))
	if err != nil {
		return err
	}
	out, err := h.endShardsMeasure(ctx, shards, start)
	if err != nil {
		return err
	}
	h.results = append(h.results, result{
		scenario: rowShardsBurst, backends: len(plan.backends), elapsed: last.Sub(first), floor: h.floorBurst,
		requests: out.requests, probes: out.probes[prefixShards], allProbes: out.probes.total(), usage: out.usage,
		notes: append(nonEmpty(createdNote(createdIn), plan.splitNote(), shardUsageNote(out.perShard),
			oneManagerNote(h.results, scenarioBurst), auditWritesNote(out.writes), perShardRequests(start.scrapes, out.scrapes)), h.probeFailures()...),
	})
	return nil
}

// shardsAtRest leaves both managers with their Ready backends for the
// at-rest window: neither should write.
func (h *harness) shardsAtRest(ctx context.Context, plan shardPlan, shards []*shardManager) error {
	window := h.opts.restWindow()
	start, err := h.startShardsMeasure(ctx, shards)
	if err != nil {
		return err
	}
	log.Printf("shards: at rest for %s", window)
	if err := sleep(ctx, window); err != nil {
		return err
	}
	out, err := h.endShardsMeasure(ctx, shards, start)
	if err != nil {
		return err
	}
	writes, reads := requestTotals(out.requests)
	clientWrites := shardWrites(start.scrapes, out.scrapes)
	ok := writes == 0 && clientWrites == 0 && len(out.writes) == 0
	if !ok {
		h.failed = true
	}
	probes := out.probes[prefixShards]
	backends := len(plan.backends)
	h.results = append(h.results, result{
		scenario: rowShardsAtRest, backends: backends, timeText: "window " + formatSeconds(window),
		requests: out.requests, probes: probes, allProbes: out.probes.total(), usage: out.usage,
		notes: append(nonEmpty(
			fmt.Sprintf("writes %s: %d at the API server, %d by the managers' clients (target 0); reads %d, probes/backend/interval %.2f",
				verdict(ok), writes, clientWrites, reads, float64(probes)/float64(backends)/restIntervals),
			auditWritesNote(out.writes), perShardRequests(start.scrapes, out.scrapes), shardUsageNote(out.perShard), oneManagerNote(h.results, scenarioAtRest),
		), h.probeFailures()...),
	})
	return nil
}

// sleep waits for d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// nonEmpty returns the notes that are not empty.
func nonEmpty(notes ...string) []string {
	out := make([]string, 0, len(notes))
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}
