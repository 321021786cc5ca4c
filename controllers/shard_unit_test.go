package controllers

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
)

// TestShardMovesGrace checks that a reference to another shard's object
// waits out the grace from when it was first seen there, and that an
// object back in the shard starts a new grace when it leaves again.
func TestShardMovesGrace(t *testing.T) {
	start := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	web := shardMoveKey{kind: "HttpBackend", NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "web"}}
	db := shardMoveKey{kind: "HttpBackend", NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "db"}}
	type step struct {
		at     time.Duration
		key    shardMoveKey
		forget bool
		want   time.Duration
	}
	cases := map[string][]step{
		"first seen waits the whole grace": {{at: 0, key: web, want: 30 * time.Second}},
		"seen again waits what is left": {
			{at: 0, key: web, want: 30 * time.Second},
			{at: 10 * time.Second, key: web, want: 20 * time.Second},
		},
		"reported once the grace has passed": {
			{at: 0, key: web, want: 30 * time.Second},
			{at: 30 * time.Second, key: web, want: 0},
			{at: time.Hour, key: web, want: 0},
		},
		"each object has its own grace": {
			{at: 0, key: web, want: 30 * time.Second},
			{at: 20 * time.Second, key: db, want: 30 * time.Second},
			{at: 40 * time.Second, key: web, want: 0},
		},
		"an object back in the shard starts afresh when it leaves again": {
			{at: 0, key: web, want: 30 * time.Second},
			{at: 40 * time.Second, key: web, forget: true},
			{at: time.Minute, key: web, want: 30 * time.Second},
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			m := newShardMoves()
			for i, s := range steps {
				if s.forget {
					m.forget(s.key)
					continue
				}
				if got := m.seen(s.key, start.Add(s.at), DefaultShardMoveGrace); got != s.want {
					t.Errorf("step %d: seen(%s at +%s) = %s, want %s", i, s.key.Name, s.at, got, s.want)
				}
			}
		})
	}
}

// TestGetBackendOnShards checks what a sharded reconciler says of a
// backend its cache does not hold, from what the API server holds.
func TestGetBackendOnShards(t *testing.T) {
	now := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	key := types.NamespacedName{Namespace: "team-a", Name: "web"}
	backend := func(shard string) client.Object {
		b := &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		if shard != "" {
			b.Labels = map[string]string{ShardLabel: shard}
		}
		return b
	}
	shardA, err := labels.Parse(ShardLabel + " in (a)")
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		// reason is the stall's reason; wait the shardWaitError's wait; both
		// empty for a backend read from the cache.
		reason string
		wait   time.Duration
	}
	cases := map[string]struct {
		shard    labels.Selector
		cached   []client.Object
		onServer []client.Object
		// seenFor is how long the backend was seen on another shard
		// before this read.
		seenFor time.Duration
		want    want
	}{
		"in the shard's cache":             {shard: shardA, cached: []client.Object{backend("a")}, onServer: []client.Object{backend("a")}},
		"missing, unsharded":               {want: want{reason: backendsv1alpha1.BackendNotFoundReason}},
		"missing everywhere":               {shard: shardA, want: want{reason: backendsv1alpha1.BackendNotFoundReason}},
		"on another shard, just seen":      {shard: shardA, onServer: []client.Object{backend("b")}, want: want{wait: DefaultShardMoveGrace}},
		"on another shard, a while":        {shard: shardA, onServer: []client.Object{backend("b")}, seenFor: 10 * time.Second, want: want{wait: 20 * time.Second}},
		"on another shard, past the grace": {shard: shardA, onServer: []client.Object{backend("b")}, seenFor: time.Minute, want: want{reason: backendsv1alpha1.ReferenceOnOtherShardReason}},
		"on the main shard":                {shard: shardA, onServer: []client.Object{backend("")}, seenFor: time.Minute, want: want{reason: backendsv1alpha1.ReferenceOnOtherShardReason}},
		"on its way into the cache":        {shard: shardA, onServer: []client.Object{backend("a")}, want: want{wait: shardArrivalRetry}},
		// Unsharded, the cache holds every backend: the API server is not
		// asked.
		"unsharded, only on the server": {onServer: []client.Object{backend("b")}, want: want{reason: backendsv1alpha1.BackendNotFoundReason}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clock := clocktesting.NewFakePassiveClock(now.Add(-tc.seenFor))
			r := newReconciler(indexedClient(tc.cached...), indexedClient(tc.onServer...), nil, []Option{WithShard(tc.shard), withClock(clock)})
			if tc.seenFor > 0 {
				// The first sighting, the grace's start.
				_ = r.getBackend(t.Context(), key, &backendsv1alpha1.HttpBackend{}, backendsv1alpha1.HttpBackendKind)
				clock.SetTime(now)
			}
			err := r.getBackend(t.Context(), key, &backendsv1alpha1.HttpBackend{}, backendsv1alpha1.HttpBackendKind)
			var got want
			if se, ok := conditions.AsStall(err); ok {
				got.reason = se.Reason
			} else if wait, ok := errors.AsType[*shardWaitError](err); ok {
				got.wait = wait.after
			} else if err != nil {
				t.Fatalf("getBackend() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("getBackend() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
