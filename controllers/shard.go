package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// ShardLabel is the label that assigns an object to a shard, Flux's: a
// manager run with --watch-label-selector="sharding.fluxcd.io/key in
// (shard1)" holds the objects labelled sharding.fluxcd.io/key=shard1, and
// the main one, run with "!sharding.fluxcd.io/key", those without it.
const ShardLabel = "sharding.fluxcd.io/key"

// shardedObjects are the kinds of this API group: the kinds a shard's
// label selector restricts. Secrets, ConfigMaps, namespaces and Pods are
// not sharded: each shard keeps of them only what its own objects name.
func shardedObjects() []client.Object {
	return []client.Object{
		&backendsv1alpha1.HttpBackend{}, &backendsv1alpha1.CosBackend{},
		&backendsv1alpha1.RemoteState{}, &backendsv1alpha1.StateLock{}, &backendsv1alpha1.OutputGrant{},
		&backendsv1alpha1.StateHistory{}, &backendsv1alpha1.StateRestore{},
	}
}

// shardObjects restricts the cache of every kind of this API group to the
// objects shard selects; nil or an empty selector selects every object.
func shardObjects(shard labels.Selector) map[client.Object]cache.ByObject {
	if shard == nil || shard.Empty() {
		return nil
	}
	byObject := map[client.Object]cache.ByObject{}
	for _, obj := range shardedObjects() {
		byObject[obj] = cache.ByObject{Label: shard}
	}
	return byObject
}

// WithShard says which objects of this API group the manager holds (all
// when nil or empty), as its cache does (see CacheOptions): an object
// that names one the selector leaves out is told so (see otherShard)
// rather than that it does not exist.
func WithShard(shard labels.Selector) Option { return func(o *options) { o.shard = shard } }

// sharded reports whether the manager holds only some of the objects of
// this API group.
func (o options) sharded() bool { return o.shard != nil && !o.shard.Empty() }

// otherShard checks, once the cache said that the object of obj's kind at
// key does not exist, whether it exists on the API server with labels the
// manager's shard does not select. It returns those labels' shard (the
// ShardLabel value, empty for the main shard) and true when so; it reads
// nothing when the manager is not sharded. obj only gives the kind. An
// object the shard selects but its cache does not hold yet is a
// shardWaitError: it is on its way in.
func (r *reconciler) otherShard(ctx context.Context, obj client.Object, key types.NamespacedName) (shard string, other bool, err error) {
	if !r.opts.sharded() {
		return "", false, nil
	}
	gvk, err := r.client.GroupVersionKindFor(obj)
	if err != nil {
		return "", false, fmt.Errorf("finding the kind of %T: %w", obj, err)
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(gvk)
	switch err := r.apiReader.Get(ctx, key, meta); {
	case apierrors.IsNotFound(err):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("reading %s %s: %w", gvk.Kind, key, err)
	}
	if r.opts.shard.Matches(labels.Set(meta.Labels)) {
		// The watch brings it, and the objects that name it, soon.
		return "", false, &shardWaitError{what: gvk.Kind + " " + key.String(), after: shardArrivalRetry}
	}
	return meta.Labels[ShardLabel], true, nil
}

// DefaultShardMoveGrace is how long a reference to an object another
// shard holds waits, its status untouched, before it is reported as
// ReferenceOnOtherShard: the time to relabel an object and the objects
// that name it, which `kubectl label` does one after the other, so that
// moving them between shards writes nothing on the way.
const DefaultShardMoveGrace = 30 * time.Second

// withShardMoveGrace replaces DefaultShardMoveGrace; tests shorten it.
func withShardMoveGrace(d time.Duration) Option { return func(o *options) { o.shardMoveGrace = d } }

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

// describeShard names a shard in messages.
func describeShard(shard string) string {
	if shard == "" {
		return "the main shard (no " + ShardLabel + " label)"
	}
	return fmt.Sprintf("shard %q (%s=%s)", shard, ShardLabel, shard)
}

// shardHint ends the message of a RemoteState no grant it sees covers,
// when the manager is sharded: the grants of another shard are not seen.
// It says nothing of the other namespace, whose grants may well not exist.
func (r *reconciler) shardHint() string {
	if !r.opts.sharded() {
		return ""
	}
	return fmt.Sprintf("; this manager sees only the OutputGrants of its own shard (--watch-label-selector=%q): "+
		"a grant is read by the RemoteStates of the shard its namespace's backends are on", r.opts.shard.String())
}
