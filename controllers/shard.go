package controllers

import (
	"context"
	"fmt"

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
