package controllers

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
)

// resolveBackendRef reads the backend ref names in namespace and its
// references through its kind. A kind that is no backend kind is an
// InvalidSpec stall, a missing backend a BackendNotFound one, a backend
// whose references are broken a BackendNotReady one.
func (r *reconciler) resolveBackendRef(ctx context.Context, namespace string, ref backendsv1alpha1.BackendReference) (backendKind, backendObject, resolvedBackend, error) {
	return r.resolveBackendFor(ctx, namespace, namespace, ref)
}

// resolveBackendFor is resolveBackendRef for reads of the state that
// tenant pays for (see envForTenant).
func (r *reconciler) resolveBackendFor(ctx context.Context, namespace, tenant string, ref backendsv1alpha1.BackendReference) (backendKind, backendObject, resolvedBackend, error) {
	kind, ok := lookupBackendKind(ref.Kind)
	if !ok {
		return nil, nil, nil, conditions.Stall(backendsv1alpha1.InvalidSpecReason, "The kind %q of spec.backendRef is not a backend kind: set it to %s",
			ref.Kind, strings.Join(backendKindNames(), " or "))
	}
	backend := kind.newObject()
	if err := r.getBackend(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, backend, ref.Kind); err != nil {
		return nil, nil, nil, err
	}
	resolved, err := kind.resolve(ctx, r.envForTenant(ctx, namespace, tenant), backend)
	if err != nil && namespace != tenant {
		return nil, nil, nil, backendNotReadyElsewhere(namespace, ref, err)
	}
	if err != nil {
		return nil, nil, nil, backendNotReady(ref, err)
	}
	return kind, backend, resolved, nil
}

// getBackend reads the backend from the cache; a missing one is a
// BackendNotFound stall, one another shard holds a ReferenceOnOtherShard
// stall.
func (r *reconciler) getBackend(ctx context.Context, key types.NamespacedName, obj client.Object, kind string) error {
	err := r.client.Get(ctx, key, obj)
	switch {
	case err == nil && r.opts.sharded():
		r.shardMoves.forget(shardMoveKey{kind: kind, NamespacedName: key})
	case apierrors.IsNotFound(err):
		if err := r.checkOtherShard(ctx, obj, key, kind); err != nil {
			return err
		}
		return conditions.Stall(backendsv1alpha1.BackendNotFoundReason, "%s %s does not exist in namespace %s (spec.backendRef names a backend of the object's own namespace)",
			kind, key.Name, key.Namespace)
	case err != nil:
		return fmt.Errorf("reading %s %s: %w", kind, key, err)
	}
	return nil
}

// checkOtherShard returns a ReferenceOnOtherShard stall when the object
// of obj's kind at key, which the cache does not hold, is another shard's
// (see otherShard), and nil when it does not exist. For the shard move
// grace (DefaultShardMoveGrace)
// after it was first seen on another shard, it returns a shardWaitError
// instead: the object, or the one that names it, may be moving.
func (r *reconciler) checkOtherShard(ctx context.Context, obj client.Object, key types.NamespacedName, kind string) error {
	shard, other, err := r.otherShard(ctx, obj, key)
	moveKey := shardMoveKey{kind: kind, NamespacedName: key}
	if err != nil || !other {
		r.shardMoves.forget(moveKey)
		return err
	}
	if wait := r.shardMoves.seen(moveKey, r.opts.clock.Now(), r.opts.shardMoveGrace); wait > 0 {
		return &shardWaitError{what: kind + " " + key.String(), after: wait}
	}
	return conditions.Stall(backendsv1alpha1.ReferenceOnOtherShardReason,
		"%s %s of namespace %s is on %s, which this manager does not hold (--watch-label-selector=%q): give it and the objects that name it the same %s label "+
			"(see docs/scaling.md, moving objects between shards)",
		kind, key.Name, key.Namespace, describeShard(shard), r.opts.shard.String(), ShardLabel)
}

// backendNotReady wraps a backend's stall as the RemoteState's own: its
// reason, then its message, which may list several problems, each with
// what to do.
func backendNotReady(ref backendsv1alpha1.BackendReference, err error) error {
	if se, ok := conditions.AsStall(err); ok {
		return conditions.Stall(backendsv1alpha1.BackendNotReadyReason, "%s %s cannot be used (%s): %s", ref.Kind, ref.Name, se.Reason, se.Message)
	}
	return err
}

// backendNotReadyElsewhere is backendNotReady for a backend of namespace,
// another than the reader's: its reason only. Its message names the
// Secrets of that namespace, the keys they hold or lack: its owners read
// it in the backend's status, the reader has no need of it.
func backendNotReadyElsewhere(namespace string, ref backendsv1alpha1.BackendReference, err error) error {
	if se, ok := conditions.AsStall(err); ok {
		return conditions.Stall(backendsv1alpha1.BackendNotReadyReason, "%s %s of namespace %s cannot be used (%s): its owners see why in its status",
			ref.Kind, ref.Name, namespace, se.Reason)
	}
	return err
}

// stateOpener returns what builds the reader of a workspace's state of
// resolved, the backend ref names: a client that cannot be built is a
// BackendNotReady stall.
func stateOpener(resolved resolvedBackend, workspace string, ref backendsv1alpha1.BackendReference) func() (stateStreamer, error) {
	return func() (stateStreamer, error) {
		stream, err := resolved.openState(workspace)
		if _, ok := conditions.AsStall(err); ok {
			return nil, err
		}
		if err != nil {
			return nil, conditions.Stall(backendsv1alpha1.BackendNotReadyReason, "%s %s cannot be used: %v", ref.Kind, ref.Name, err)
		}
		return stream, nil
	}
}

// workspaceOrDefault is the workspace to read.
func workspaceOrDefault(w string) string {
	if w == "" {
		return backendsv1alpha1.DefaultWorkspace
	}
	return w
}
