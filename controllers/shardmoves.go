package controllers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultShardMoveGrace is how long a reference to an object another
// shard holds waits, its status untouched, before it is reported as
// ReferenceOnOtherShard: the time to relabel an object and the objects
// that name it, which `kubectl label` does one after the other, so that
// moving them between shards writes nothing on the way.
const DefaultShardMoveGrace = 30 * time.Second

// shardArrivalRetry is how soon a reference to an object the shard
// selects, but its cache does not hold yet, is read again.
const shardArrivalRetry = time.Second

// shardWaitError is the error of a reference to an object that is moving
// between shards: the reconcile ends without a status write and comes
// back after a while (see reconcileObject).
type shardWaitError struct {
	what  string
	after time.Duration
}

func (e *shardWaitError) Error() string {
	return e.what + " is moving between shards; waiting " + e.after.String() + " before reporting it"
}

// shardMoves remembers since when each object a reconciler's objects name
// has been seen on another shard.
type shardMoves struct {
	mu    sync.Mutex
	since map[shardMoveKey]time.Time
}

// shardMoveKey is an object of a kind.
type shardMoveKey struct {
	kind string
	types.NamespacedName
}

// newShardMoves returns an empty memory.
func newShardMoves() *shardMoves { return &shardMoves{since: map[shardMoveKey]time.Time{}} }

// seen records that key is on another shard at now and returns how long
// to wait before reporting it; 0 once grace has passed since it was
// first seen there.
func (m *shardMoves) seen(key shardMoveKey, now time.Time, grace time.Duration) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	first, ok := m.since[key]
	if !ok {
		m.since[key], first = now, now
	}
	return max(0, first.Add(grace).Sub(now))
}

// forget drops key: it is in the shard, or gone.
func (m *shardMoves) forget(key shardMoveKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.since, key)
}
