package main

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers"
)

// prefixShards is the prefix of the shards scenario's namespaces.
const prefixShards = "shards"

// stateLockReason is the reason of the shards scenario's StateLocks.
const stateLockReason = "scale benchmark: a lock held across a shard relabel"

// shardLabels is the labels of an object on shard.
func shardLabels(shard string) map[string]string {
	return map[string]string{controllers.ShardLabel: shard}
}

// newStateLock returns the StateLock of backend key on shard: named as
// its backend, holding its lock until deleted.
func newStateLock(key types.NamespacedName, shard string) *backendsv1alpha1.StateLock {
	return &backendsv1alpha1.StateLock{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: shardLabels(shard)},
		Spec: backendsv1alpha1.StateLockSpec{
			BackendRef: backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.HttpBackendKind, Name: key.Name},
			Reason:     stateLockReason,
		},
	}
}

// lockAddressPatch is the merge patch that gives a backend of the state
// server stateURL a lock and unlock address, its state's own (see
// newBackend): the state server takes LOCK and UNLOCK there.
func lockAddressPatch(key types.NamespacedName, stateURL string) ([]byte, error) {
	address := stateURL + statePath(key)
	return json.Marshal(map[string]any{"spec": map[string]string{"lockAddress": address, "unlockAddress": address}})
}

// shardLabelPatch is the merge patch that moves an object to shard.
func shardLabelPatch(shard string) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{"labels": shardLabels(shard)}})
}

// addLockAddresses gives the backends keys a lock and unlock address, from
// workers goroutines.
func addLockAddresses(ctx context.Context, c client.Client, workers int, keys []types.NamespacedName, stateURL string) error {
	return parallel(ctx, workers, len(keys), func(ctx context.Context, i int) error {
		patch, err := lockAddressPatch(keys[i], stateURL)
		if err != nil {
			return err
		}
		b := &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Namespace: keys[i].Namespace, Name: keys[i].Name}}
		if err := c.Patch(ctx, b, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("giving HttpBackend %s a lock address: %w", keys[i], err)
		}
		return nil
	})
}

// createStateLocks creates a StateLock on shard for each of the backends
// keys, from workers goroutines.
func createStateLocks(ctx context.Context, c client.Client, workers int, keys []types.NamespacedName, shard string) error {
	return parallel(ctx, workers, len(keys), func(ctx context.Context, i int) error {
		if err := c.Create(ctx, newStateLock(keys[i], shard)); err != nil {
			return fmt.Errorf("creating StateLock %s: %w", keys[i], err)
		}
		return nil
	})
}

// relabelPairs moves each backend of keys to shard, then its StateLock
// right after, from workers goroutines: as a user relabelling a
// namespace's objects would, one kind after the other per object.
func relabelPairs(ctx context.Context, c client.Client, workers int, keys []types.NamespacedName, shard string) error {
	patch, err := shardLabelPatch(shard)
	if err != nil {
		return err
	}
	return parallel(ctx, workers, len(keys), func(ctx context.Context, i int) error {
		meta := metav1.ObjectMeta{Namespace: keys[i].Namespace, Name: keys[i].Name}
		for _, obj := range []client.Object{&backendsv1alpha1.HttpBackend{ObjectMeta: meta}, &backendsv1alpha1.StateLock{ObjectMeta: meta}} {
			if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return fmt.Errorf("relabelling %T %s: %w", obj, keys[i], err)
			}
		}
		return nil
	})
}
