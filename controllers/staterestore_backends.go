package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// What a backend knows of the StateRestores that write to it: like a
// StateLock, a restore takes the backend's lock only once the backend's
// probe learned what the state server does with locks (see lockWaiting),
// so a restore under way makes the backend a lock user.

// restoresPending reports whether a StateRestore that has not finished
// writes to backend, a backend of kind, through one of the histories whose
// source it is.
func (r *reconciler) restoresPending(ctx context.Context, kind string, backend client.Object) (bool, error) {
	histories := &backendsv1alpha1.StateHistoryList{}
	if err := r.client.List(ctx, histories, client.InNamespace(backend.GetNamespace()),
		client.MatchingFields{backendRefIndex: backendRefValue(kind, backend.GetName())}); err != nil {
		return false, fmt.Errorf("listing the StateHistories of %s %s: %w", kind, client.ObjectKeyFromObject(backend), err)
	}
	for _, h := range histories.Items {
		if h.Spec.BackendRef.Kind != kind || h.Spec.BackendRef.Name != backend.GetName() {
			continue // the backend is the history's destination
		}
		restores := &backendsv1alpha1.StateRestoreList{}
		if err := r.client.List(ctx, restores, client.InNamespace(h.Namespace),
			client.MatchingFields{backendRefIndex: backendRefValue(backendsv1alpha1.StateHistoryKind, h.Name)}); err != nil {
			return false, fmt.Errorf("listing the StateRestores of StateHistory %s: %w", client.ObjectKeyFromObject(&h), err)
		}
		for i := range restores.Items {
			if !restoreFinished(meta.FindStatusCondition(restores.Items[i].Status.Conditions, backendsv1alpha1.RestoredCondition)) {
				return true, nil
			}
		}
	}
	return false, nil
}

// restoredBackend maps a StateRestore to the source of its history, when
// that is a backend of kind.
func restoredBackend(c client.Reader, kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		sr, ok := obj.(*backendsv1alpha1.StateRestore)
		if !ok {
			return nil
		}
		h := &backendsv1alpha1.StateHistory{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: sr.Namespace, Name: sr.Spec.HistoryRef.Name}, h); err != nil || h.Spec.BackendRef.Kind != kind {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: h.Namespace, Name: h.Spec.BackendRef.Name}}}
	}
}

// restoreFinishedChanged passes the creation and deletion of
// StateRestores, and the updates that finish them.
func restoreFinishedChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*backendsv1alpha1.StateRestore)
		after, ok2 := e.ObjectNew.(*backendsv1alpha1.StateRestore)
		finished := func(sr *backendsv1alpha1.StateRestore) bool {
			return restoreFinished(meta.FindStatusCondition(sr.Status.Conditions, backendsv1alpha1.RestoredCondition))
		}
		return ok1 && ok2 && finished(before) != finished(after)
	}}
}
