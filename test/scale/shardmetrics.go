package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// What the harness reads of a shard manager's own metrics: the backends
// it holds (its per-backend series), its API requests as its client counts
// them, and its StateLock reconciles.

// perBackendMetrics are the operator's series of one backend each,
// labelled kind, namespace and name (controllers/metrics.go): a manager
// serves them for the backends it holds, from the first reconcile on (the
// reachable series is set from the status before any probe), and drops
// them when the backend leaves its cache.
var perBackendMetrics = []string{
	"infrastate_backend_reachable", "infrastate_backend_lock_held", "infrastate_backend_state_size_bytes",
	"infrastate_state_lock_age_seconds", "infrastate_backend_lock_stale_after_seconds",
}

// clientRequestsMetric is client-go's count of the requests a process
// sent, by HTTP method and code: unlike the API server's count, it tells
// the managers apart.
const clientRequestsMetric = "rest_client_requests_total"

// stateLockController is the name of the manager's StateLock controller
// in its metrics.
const stateLockController = "statelock"

// shardScrape is what one read of a shard manager's metrics says.
type shardScrape struct {
	// held are the HttpBackends its per-backend series name, sorted.
	held []types.NamespacedName
	// client counts its API requests by method.
	client methodCounts
	// stateLockReconciles is its StateLock controller's reconcile count.
	stateLockReconciles int64
}

// shardScrapeFamilies are the families shardScrapeFrom reads.
func shardScrapeFamilies() []string {
	return append(slices.Clone(perBackendMetrics), clientRequestsMetric, reconcileMetric)
}

// shardScrapeFrom reads a shard manager's metrics.
func shardScrapeFrom(families map[string]*dto.MetricFamily) shardScrape {
	held := map[types.NamespacedName]bool{}
	for _, name := range perBackendMetrics {
		for _, m := range families[name].GetMetric() {
			l := labelsOf(m)
			if l["kind"] == backendsv1alpha1.HttpBackendKind && l["name"] != "" {
				held[types.NamespacedName{Namespace: l["namespace"], Name: l["name"]}] = true
			}
		}
	}
	keys := slices.SortedFunc(maps.Keys(held), func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	client := methodCounts{}
	for _, m := range families[clientRequestsMetric].GetMetric() {
		client[labelsOf(m)["method"]] += int64(sampleValue(m))
	}
	return shardScrape{
		held: keys, client: client,
		stateLockReconciles: int64(sumWhere(families, reconcileMetric, map[string]string{"controller": stateLockController})),
	}
}

// methodCounts counts API requests by HTTP method.
type methodCounts map[string]int64

// minus returns c minus other, without the methods whose count is zero or
// less.
func (c methodCounts) minus(other methodCounts) methodCounts {
	out := methodCounts{}
	for k, v := range c {
		if d := v - other[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// clientWriteMethods are the HTTP methods that change objects.
var clientWriteMethods = []string{"POST", "PUT", "PATCH", "DELETE"}

// writes sums the requests that change objects.
func (c methodCounts) writes() int64 {
	var n int64
	for _, m := range clientWriteMethods {
		n += c[m]
	}
	return n
}

// perShardRequests prints each shard's writes and reads (GET, which
// counts lists and watches too) as its client counted them between before
// and after: "client-side counts (rest_client_requests_total): a writes
// 2, reads 10; b writes 0, reads 0".
func perShardRequests(before, after map[string]shardScrape) string {
	parts := make([]string, 0, len(shardNames))
	for _, s := range shardNames {
		d := after[s].client.minus(before[s].client)
		parts = append(parts, fmt.Sprintf("%s writes %d, reads %d", s, d.writes(), d["GET"]))
	}
	return "client-side counts (rest_client_requests_total): " + strings.Join(parts, "; ")
}

// shardWrites sums the shards' writes between before and after, as their
// clients counted them.
func shardWrites(before, after map[string]shardScrape) int64 {
	var n int64
	for _, s := range shardNames {
		n += after[s].client.minus(before[s].client).writes()
	}
	return n
}
