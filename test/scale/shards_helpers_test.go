package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers"
)

func TestShardArgs(t *testing.T) {
	o := options{probeInterval: 10 * time.Second, concurrency: 4}
	ports := managerPorts{health: 1, metrics: 2, pprof: 3}
	got := shardArgs("/tmp/kc-a", ports, o, "a")
	want := append(managerArgs("/tmp/kc-a", ports, o),
		"--watch-label-selector=sharding.fluxcd.io/key in (a)", "--leader-election-id=backend-operator-shard-a")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shardArgs mismatch (-want +got):\n%s", diff)
	}
}

func TestShardUsageNote(t *testing.T) {
	got := shardUsageNote(map[string]*managerUsage{
		"b": {peak: 70 << 20, rss: 64 << 20, cpu: 1500 * time.Millisecond},
		"a": {peak: 72 << 20, rss: 65 << 20, cpu: 1200 * time.Millisecond},
	})
	want := "shard a: peak 72.0 MiB, RSS 65.0 MiB, CPU 1.20s; shard b: peak 70.0 MiB, RSS 64.0 MiB, CPU 1.50s"
	if got != want {
		t.Errorf("shardUsageNote = %q, want %q", got, want)
	}
}

func TestOneManagerNote(t *testing.T) {
	results := []result{
		{scenario: scenarioFloorBurst, backends: 400},
		{scenario: scenarioBurst, backends: 400, usage: &managerUsage{peak: 80 << 20, rss: 79 << 20}},
	}
	if got, want := oneManagerNote(results, scenarioBurst), "one manager (burst row, 400 backends): peak 80.0 MiB, RSS 79.0 MiB"; got != want {
		t.Errorf("oneManagerNote = %q, want %q", got, want)
	}
	if got := oneManagerNote(results, scenarioAtRest); got != "" {
		t.Errorf("oneManagerNote without the row = %q, want empty", got)
	}
}

func TestNonEmpty(t *testing.T) {
	if diff := cmp.Diff([]string{"a", "b"}, nonEmpty("", "a", "", "b")); diff != "" {
		t.Errorf("nonEmpty mismatch (-want +got):\n%s", diff)
	}
}

func TestShardPatches(t *testing.T) {
	key := types.NamespacedName{Namespace: "shards-0000", Name: "hb-00001"}
	patch, err := lockAddressPatch(key, "http://127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Spec backendsv1alpha1.HttpBackendSpec `json:"spec"`
	}
	if err := json.Unmarshal(patch, &spec); err != nil {
		t.Fatal(err)
	}
	address := newBackend(key, "http://127.0.0.1:9").Spec.Address
	if spec.Spec.LockAddress != address || spec.Spec.UnlockAddress != address {
		t.Errorf("lockAddressPatch = %s, want lock and unlock address %s", patch, address)
	}
	patch, err = shardLabelPatch("b")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"metadata":{"labels":{"sharding.fluxcd.io/key":"b"}}}`; string(patch) != want {
		t.Errorf("shardLabelPatch = %s, want %s", patch, want)
	}
}

func TestNewStateLock(t *testing.T) {
	key := types.NamespacedName{Namespace: "shards-0000", Name: "hb-00001"}
	sl := newStateLock(key, "a")
	if sl.Namespace != key.Namespace || sl.Name != key.Name || sl.Labels[controllers.ShardLabel] != "a" {
		t.Errorf("newStateLock metadata = %v, want %s on shard a", sl.ObjectMeta, key)
	}
	if want := (backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.HttpBackendKind, Name: key.Name}); sl.Spec.BackendRef != want {
		t.Errorf("newStateLock backendRef = %v, want %v", sl.Spec.BackendRef, want)
	}
	if sl.Spec.Reason == "" || sl.Spec.Until != nil {
		t.Errorf("newStateLock spec = %+v, want a reason and no end", sl.Spec)
	}
}

func TestShardsRunLast(t *testing.T) {
	if allScenarios[len(allScenarios)-1] != scenarioShards {
		t.Errorf("allScenarios = %v, want shards last: it stops the one manager", allScenarios)
	}
}
