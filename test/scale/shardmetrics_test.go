package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestShardScrapeFrom(t *testing.T) {
	text := `# HELP infrastate_backend_reachable 1 when the last probe reached the backend's state.
# TYPE infrastate_backend_reachable gauge
infrastate_backend_reachable{kind="HttpBackend",name="hb-00002",namespace="shards-0001"} 1
infrastate_backend_reachable{kind="HttpBackend",name="hb-00001",namespace="shards-0000"} 1
infrastate_backend_reachable{kind="CosBackend",name="cos",namespace="shards-0000"} 1
# TYPE infrastate_backend_lock_held gauge
infrastate_backend_lock_held{kind="HttpBackend",name="hb-00001",namespace="shards-0000"} 1
infrastate_backend_lock_held{kind="HttpBackend",name="hb-00003",namespace="shards-0000"} 1
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 40
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 4
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 3
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="PATCH"} 2
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="statelock",result="success"} 7
controller_runtime_reconcile_total{controller="statelock",result="requeue_after"} 5
controller_runtime_reconcile_total{controller="httpbackend",result="success"} 100
# TYPE workqueue_depth gauge
workqueue_depth{controller="statelock",name="statelock"} 0
`
	families, err := parseFamilies(strings.NewReader(text), shardScrapeFamilies()...)
	if err != nil {
		t.Fatal(err)
	}
	got := shardScrapeFrom(families)
	want := shardScrape{
		held: []types.NamespacedName{
			{Namespace: "shards-0000", Name: "hb-00001"}, {Namespace: "shards-0000", Name: "hb-00003"}, {Namespace: "shards-0001", Name: "hb-00002"},
		},
		client:              methodCounts{"GET": 40, "POST": 4, "PATCH": 5},
		stateLockReconciles: 12,
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(shardScrape{})); diff != "" {
		t.Errorf("shardScrapeFrom mismatch (-want +got):\n%s", diff)
	}
}

func TestMethodCounts(t *testing.T) {
	before := methodCounts{"GET": 10, "PATCH": 2}
	after := methodCounts{"GET": 15, "PATCH": 5, "POST": 1, "DELETE": 1}
	d := after.minus(before)
	if diff := cmp.Diff(methodCounts{"GET": 5, "PATCH": 3, "POST": 1, "DELETE": 1}, d); diff != "" {
		t.Errorf("minus mismatch (-want +got):\n%s", diff)
	}
	if got := d.writes(); got != 5 {
		t.Errorf("writes() = %d, want 5", got)
	}
}

func TestPerShardRequests(t *testing.T) {
	before := map[string]shardScrape{"a": {client: methodCounts{"GET": 1}}, "b": {client: methodCounts{}}}
	after := map[string]shardScrape{"a": {client: methodCounts{"GET": 3, "PATCH": 2}}, "b": {client: methodCounts{"POST": 1}}}
	want := "client-side counts (rest_client_requests_total): a writes 2, reads 2; b writes 1, reads 0"
	if got := perShardRequests(before, after); got != want {
		t.Errorf("perShardRequests = %q, want %q", got, want)
	}
	if got := shardWrites(before, after); got != 3 {
		t.Errorf("shardWrites = %d, want 3", got)
	}
}
