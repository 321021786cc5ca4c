package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/infrastate/backend-operator/controllers"
)

// The two shards of the shards scenario, in the order they start and
// print.
const (
	shardA = "a"
	shardB = "b"
)

// shardNames are the shards, in order.
var shardNames = []string{shardA, shardB}

// shardSelector is the --watch-label-selector of the manager of shard.
func shardSelector(shard string) string {
	return controllers.ShardLabel + " in (" + shard + ")"
}

// shardPlan is the shards scenario's batch: its namespaces each on one
// shard, whole, and the backends relabelled from a to b.
type shardPlan struct {
	batch
	// shardOf is the shard each namespace starts on.
	shardOf map[string]string
	// relabel are the backends (and their StateLocks) moved from a to b,
	// in creation order.
	relabel []types.NamespacedName
}

// planShards plans n backends named after prefix on two shards, by
// namespace: namespaces alternate between a and b, starting with a. The
// namespaces hold at most perNamespace backends, and at most half of n
// (rounded up), so that each shard gets one at least when n > 1. The
// first relabel backends of shard a (at most all of them) are the ones
// the relabel moves to b.
func planShards(prefix string, n, perNamespace, relabel int) shardPlan {
	per := max(min(perNamespace, (n+1)/2), 1)
	p := shardPlan{batch: planBatch(prefix, n, per), shardOf: map[string]string{}}
	for i, ns := range p.namespaces {
		p.shardOf[ns] = shardNames[i%len(shardNames)]
	}
	for _, key := range p.backends {
		if len(p.relabel) < relabel && p.shardOf[key.Namespace] == shardA {
			p.relabel = append(p.relabel, key)
		}
	}
	return p
}

// initialShard is the shard key starts on.
func (p shardPlan) initialShard(key types.NamespacedName) string { return p.shardOf[key.Namespace] }

// finalShard is the shard key is on once relabelled.
func (p shardPlan) finalShard(key types.NamespacedName) string {
	if slices.Contains(p.relabel, key) {
		return shardB
	}
	return p.initialShard(key)
}

// count returns how many of the batch's backends each shard holds at
// first, and after the relabel.
func (p shardPlan) count() (initial, final map[string]int) {
	initial, final = map[string]int{}, map[string]int{}
	for _, key := range p.backends {
		initial[p.initialShard(key)]++
		final[p.finalShard(key)]++
	}
	return initial, final
}

// splitNote describes the split of the batch: backends and namespaces
// per shard.
func (p shardPlan) splitNote() string {
	initial, _ := p.count()
	namespaces := map[string]int{}
	for _, shard := range p.shardOf {
		namespaces[shard]++
	}
	parts := make([]string, 0, len(shardNames))
	for _, s := range shardNames {
		noun := "namespaces"
		if namespaces[s] == 1 {
			noun = "namespace"
		}
		parts = append(parts, fmt.Sprintf("%s %d in %d %s", s, initial[s], namespaces[s], noun))
	}
	return "split by namespace: " + strings.Join(parts, ", ")
}

// holdingsReport is the outcome of checkHoldings: which manager holds
// which backend, as the per-backend series of their metrics say.
type holdingsReport struct {
	// Backends is the number of backends that should be held.
	Backends int
	// Held counts, per shard, the backends it holds among them.
	Held map[string]int
	// Unheld are the backends no manager holds; Both those more than one
	// holds; Misplaced those held only by a shard other than theirs;
	// Strangers the backends held that should not be (not of the batch:
	// no shard label). Each is sorted.
	Unheld, Both, Misplaced, Strangers []string
}

// checkHoldings checks that each backend of want is held by exactly its
// shard and that no manager holds anything else: the union of held is
// want, their intersection is empty. want maps each backend to its shard;
// held maps each shard to the backends its manager holds.
func checkHoldings(want map[types.NamespacedName]string, held map[string][]types.NamespacedName) holdingsReport {
	r := holdingsReport{Backends: len(want), Held: map[string]int{}}
	holders := map[types.NamespacedName][]string{}
	strangers := map[types.NamespacedName]bool{}
	for _, shard := range slices.Sorted(maps.Keys(held)) {
		for _, key := range held[shard] {
			if _, ok := want[key]; !ok {
				strangers[key] = true
				continue
			}
			if !slices.Contains(holders[key], shard) {
				holders[key] = append(holders[key], shard)
				r.Held[shard]++
			}
		}
	}
	for key, shard := range want {
		switch h := holders[key]; {
		case len(h) == 0:
			r.Unheld = append(r.Unheld, key.String())
		case len(h) > 1:
			r.Both = append(r.Both, fmt.Sprintf("%s (%s)", key, strings.Join(h, ",")))
		case h[0] != shard:
			r.Misplaced = append(r.Misplaced, fmt.Sprintf("%s (on %s, want %s)", key, h[0], shard))
		}
	}
	for key := range strangers {
		r.Strangers = append(r.Strangers, key.String())
	}
	slices.Sort(r.Unheld)
	slices.Sort(r.Both)
	slices.Sort(r.Misplaced)
	slices.Sort(r.Strangers)
	return r
}

// ok reports whether every backend has exactly its shard and nothing else
// is held.
func (r holdingsReport) ok() bool {
	return len(r.Unheld) == 0 && len(r.Both) == 0 && len(r.Misplaced) == 0 && len(r.Strangers) == 0
}

// String summarises the report in one line, naming at most three
// offenders of each sort.
func (r holdingsReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "holdings %s: %d backends", verdict(r.ok()), r.Backends)
	for _, s := range slices.Sorted(maps.Keys(r.Held)) {
		fmt.Fprintf(&b, ", %s %d", s, r.Held[s])
	}
	fmt.Fprintf(&b, "; %d held by none, %d by both, %d by the wrong shard, %d not of the batch",
		len(r.Unheld), len(r.Both), len(r.Misplaced), len(r.Strangers))
	b.WriteString(offenders(r.Unheld, r.Both, r.Misplaced, r.Strangers))
	return b.String()
}

// verdict prints a check's outcome.
func verdict(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

// offenders names at most three of each non-empty list, in parentheses.
func offenders(lists ...[]string) string {
	var b strings.Builder
	for _, list := range lists {
		if len(list) > 0 {
			b.WriteString(" (" + strings.Join(list[:min(3, len(list))], "; ") + ")")
		}
	}
	return b.String()
}

// adoptionLeft says what is left before shard b has adopted the
// relabelled backends keys and their StateLocks, "" once nothing is: b's
// per-backend series name every backend and a's none; each backend is on
// b, Ready, protected and its lock seen held (backends); each StateLock is
// on b, Ready, with the lock ID it had before (locks, lockIDs); and b's
// StateLock controller has reconciled at least once per StateLock since
// the relabel (bReconciles): StateLocks have no series of their own.
func adoptionLeft(keys []types.NamespacedName, scrapes map[string]shardScrape, backends map[types.NamespacedName]backendView,
	locks map[types.NamespacedName]stateLockView, lockIDs map[types.NamespacedName]string, bReconciles int64,
) string {
	held := func(shard string) map[types.NamespacedName]bool {
		out := map[types.NamespacedName]bool{}
		for _, k := range scrapes[shard].held {
			out[k] = true
		}
		return out
	}
	onA, onB := held(shardA), held(shardB)
	var seriesB, seriesA, backendsOK, locksOK int
	for _, k := range keys {
		if onB[k] {
			seriesB++
		}
		if onA[k] {
			seriesA++
		}
		if v, ok := backends[k]; ok && v.Shard == shardB && len(lockedBackendAnomalies(v)) == 0 {
			backendsOK++
		}
		if v, ok := locks[k]; ok && v.Shard == shardB && len(stateLockAnomalies(v, lockIDs[k])) == 0 {
			locksOK++
		}
	}
	n := len(keys)
	var left []string
	if seriesB < n {
		left = append(left, fmt.Sprintf("series on b %d/%d", seriesB, n))
	}
	if seriesA > 0 {
		left = append(left, fmt.Sprintf("series still on a %d", seriesA))
	}
	if backendsOK < n {
		left = append(left, fmt.Sprintf("backends on b Ready, protected and locked %d/%d", backendsOK, n))
	}
	if locksOK < n {
		left = append(left, fmt.Sprintf("StateLocks on b Ready with their lock %d/%d", locksOK, n))
	}
	if bReconciles < int64(n) {
		left = append(left, fmt.Sprintf("StateLock reconciles on b %d/%d", bReconciles, n))
	}
	return strings.Join(left, ", ")
}

// lockedLeft says what is left before the StateLocks of keys hold their
// backends' locks on shard, "" once nothing is: each StateLock is on
// shard, Ready, with a lock ID; each backend is Ready, protected and its
// lock seen held.
func lockedLeft(keys []types.NamespacedName, backends map[types.NamespacedName]backendView,
	locks map[types.NamespacedName]stateLockView, shard string,
) string {
	var backendsOK, locksOK int
	for _, k := range keys {
		if v, ok := backends[k]; ok && len(lockedBackendAnomalies(v)) == 0 {
			backendsOK++
		}
		if v, ok := locks[k]; ok && v.Shard == shard && v.LockID != "" && len(stateLockAnomalies(v, v.LockID)) == 0 {
			locksOK++
		}
	}
	n := len(keys)
	var left []string
	if locksOK < n {
		left = append(left, fmt.Sprintf("StateLocks Ready with a lock %d/%d", locksOK, n))
	}
	if backendsOK < n {
		left = append(left, fmt.Sprintf("backends Ready, protected and locked %d/%d", backendsOK, n))
	}
	return strings.Join(left, ", ")
}

// lockChecksNote prints the lock checks of the relabelled locks in the
// window after the adoption (see checkWindow), with the check's verdict.
func lockChecksNote(s lockTrafficSummary, intervals int) string {
	return fmt.Sprintf("lock checks in the window after the adoption %s: %.2f per lock per interval (target about 1, never 2), "+
		"per lock min %d max %d in %d intervals; %d locks unchecked, %d checked twice as often",
		verdict(s.Unchecked == 0 && s.Doubled == 0), s.checksPerInterval(intervals), s.MinRefused, s.MaxRefused, intervals, s.Unchecked, s.Doubled)
}
