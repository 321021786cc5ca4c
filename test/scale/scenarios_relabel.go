package main

import (
	"context"
	"fmt"
	"log"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// adoptionPoll is how often the relabel checks whether shard b has
// adopted the objects moved: the resolution of its time.
const adoptionPoll = 500 * time.Millisecond

// shardsRelabel locks the plan's relabel backends with StateLocks on
// shard a, then relabels those backends and their StateLocks to shard b,
// and measures the handover: the time until b holds them all, the locks
// taken and released since (none should be), the lock checks per lock in
// a window after (one manager's, not two), the API writes, and who holds
// what at the end.
func (h *harness) shardsRelabel(ctx context.Context, plan shardPlan, shards []*shardManager) error {
	keys := plan.relabel
	timeout := h.opts.waitTimeout(len(keys))
	backends, err := watchViews(ctx, h.tracker, &backendsv1alpha1.HttpBackend{}, viewOfBackend)
	if err != nil {
		return err
	}
	locks, err := watchViews(ctx, h.tracker, &backendsv1alpha1.StateLock{}, viewOfStateLock)
	if err != nil {
		return err
	}

	log.Printf("shards: locking %d backends of shard %s with StateLocks", len(keys), shardA)
	lockStart := time.Now()
	if err := addLockAddresses(ctx, h.client, h.opts.workers, keys, h.state.url); err != nil {
		return err
	}
	if err := createStateLocks(ctx, h.client, h.opts.workers, keys, shardA); err != nil {
		return err
	}
	if _, err := waitUntil(ctx, "shards: StateLocks on a", timeout, adoptionPoll, func() (string, error) {
		return lockedLeft(keys, backends.views(keys), locks.views(keys), shardA), nil
	}); err != nil {
		return err
	}
	lockedIn := time.Since(lockStart)
	quiet, err := waitQuiet(ctx, shards, time.Minute)
	if err != nil {
		return err
	}
	lockIDs := map[types.NamespacedName]string{}
	for k, v := range locks.views(keys) {
		lockIDs[k] = v.LockID
	}

	paths := statePaths(keys)
	start, err := h.startShardsMeasure(ctx, shards)
	if err != nil {
		return err
	}
	trafficBefore := h.state.lockTraffic(paths)
	backendChecks := map[types.NamespacedName]func(backendView) []string{}
	lockChecks := map[types.NamespacedName]func(stateLockView) []string{}
	for _, k := range keys {
		backendChecks[k] = lockedBackendAnomalies
		lockChecks[k] = func(v stateLockView) []string { return stateLockAnomalies(v, lockIDs[k]) }
	}
	backends.record(backendChecks)
	locks.record(lockChecks)
	log.Printf("shards: relabelling %d backends and their StateLocks from %s to %s", len(keys), shardA, shardB)
	relabelStart := time.Now()
	if err := relabelPairs(ctx, h.client, h.opts.workers, keys, shardB); err != nil {
		return err
	}
	patchedIn := time.Since(relabelStart)
	adopted, err := waitUntil(ctx, "shards: adoption by b", timeout, adoptionPoll, func() (string, error) {
		scrapes, err := scrapeShards(ctx, shards)
		if err != nil {
			return "", err
		}
		reconciles := scrapes[shardB].stateLockReconciles - start.scrapes[shardB].stateLockReconciles
		return adoptionLeft(keys, scrapes, backends.views(keys), locks.views(keys), lockIDs, reconciles), nil
	})
	if err != nil {
		return err
	}

	window := h.opts.restWindow()
	windowStart, err := scrapeShards(ctx, shards)
	if err != nil {
		return err
	}
	trafficWindow := h.state.lockTraffic(paths)
	log.Printf("shards: adopted in %s; watching the locks for %s", adopted.Sub(relabelStart).Round(time.Millisecond), window)
	if err := sleep(ctx, window); err != nil {
		return err
	}
	trafficEnd := h.state.lockTraffic(paths)
	out, err := h.endShardsMeasure(ctx, shards, start)
	if err != nil {
		return err
	}
	seen := backends.stopRecording()
	seen.merge(locks.stopRecording())

	want := map[types.NamespacedName]string{}
	for _, k := range plan.backends {
		want[k] = plan.finalShard(k)
	}
	held := map[string][]types.NamespacedName{}
	for _, s := range shardNames {
		held[s] = out.scrapes[s].held
	}
	holdings := checkHoldings(want, held)
	stateLocks := checkStateLocks(lockIDs, locks.views(keys), shardB)
	lost := seen.seen("StateLock " + backendsv1alpha1.LockLostReason)
	sinceRelabel := summarizeLockTraffic(paths, trafficBefore, trafficEnd, 0, math.MaxInt64)
	minChecks, maxChecks := checkWindow(restIntervals)
	inWindow := summarizeLockTraffic(paths, trafficWindow, trafficEnd, minChecks, maxChecks)
	reconcilesA := out.scrapes[shardA].stateLockReconciles - windowStart[shardA].stateLockReconciles
	reconcilesB := out.scrapes[shardB].stateLockReconciles - windowStart[shardB].stateLockReconciles

	locksKept := sinceRelabel.Sum.Taken == 0 && sinceRelabel.Sum.Unlocks == 0
	checksOK := inWindow.Unchecked == 0 && inWindow.Doubled == 0
	reconcilesOK := reconcilesA == 0 && reconcilesB >= int64(len(keys))
	if !locksKept || !checksOK || !reconcilesOK || !holdings.ok() || !stateLocks.ok() || lost {
		h.failed = true
	}
	quietNote := ""
	if !quiet {
		quietNote = "the managers still wrote during the minute before the relabel"
	}
	h.results = append(h.results, result{
		scenario: rowShardsRelabel, backends: len(keys), elapsed: adopted.Sub(relabelStart),
		requests: out.requests, probes: sinceRelabel.Sum.total(), allProbes: out.probes.total(), usage: out.usage,
		notes: append(nonEmpty(
			fmt.Sprintf("%d backends and their StateLocks moved from %s to %s (StateLocks held on %s %s before); "+
				"patches sent in %s, adopted by %s %s after the last returned (polled every %s)", len(keys), shardA, shardB, shardA,
				formatSeconds(lockedIn), formatSeconds(patchedIn), shardB, formatSeconds(adopted.Sub(relabelStart.Add(patchedIn))), adoptionPoll),
			quietNote,
			fmt.Sprintf("locks since the relabel %s: %s", verdict(locksKept), lockTrafficNote(sinceRelabel.Sum)),
			lockChecksNote(inWindow, restIntervals),
			fmt.Sprintf("StateLock reconciles in the window %s: a %d (target 0), b %d (target at least %d)",
				verdict(reconcilesOK), reconcilesA, reconcilesB, len(keys)),
			holdings.String(),
			fmt.Sprintf("%s; LockLost seen at any time: %t", stateLocks, lost),
			"seen during the relabel: "+seen.String(),
			auditWritesNote(out.writes), perShardRequests(start.scrapes, out.scrapes),
			shardUsageNote(out.perShard),
		), h.probeFailures()...),
	})
	return nil
}

// waitUntil calls left every poll until it returns "" (nothing left) and
// returns the time of that call. It logs what is left every 10 seconds
// under label and gives up after timeout, or at left's first error.
func waitUntil(ctx context.Context, label string, timeout, poll time.Duration, left func() (string, error)) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	nextLog := time.Now().Add(10 * time.Second)
	for {
		now := time.Now()
		what, err := left()
		switch {
		case err != nil:
			return time.Time{}, fmt.Errorf("%s: %w", label, err)
		case what == "":
			return now, nil
		case now.After(deadline):
			return time.Time{}, fmt.Errorf("%s: not done after %s: %s", label, timeout, what)
		case now.After(nextLog):
			log.Printf("%s: %s", label, what)
			nextLog = now.Add(10 * time.Second)
		}
		if err := sleep(ctx, poll); err != nil {
			return time.Time{}, err
		}
	}
}

// waitQuiet waits, at most timeout, until neither shard manager's client
// sent a write for two seconds, so that the relabel starts from a quiet
// state; it reports whether that happened.
func waitQuiet(ctx context.Context, shards []*shardManager, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	prev, err := scrapeShards(ctx, shards)
	if err != nil {
		return false, err
	}
	for time.Now().Before(deadline) {
		if err := sleep(ctx, 2*time.Second); err != nil {
			return false, err
		}
		cur, err := scrapeShards(ctx, shards)
		if err != nil {
			return false, err
		}
		if shardWrites(prev, cur) == 0 {
			return true, nil
		}
		prev = cur
	}
	log.Printf("shards: the managers still write after %s; relabelling all the same", timeout)
	return false, nil
}
