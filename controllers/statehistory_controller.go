package controllers

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/history"
)

// stateHistoryGates are the conditions that gate a StateHistory's Ready.
var stateHistoryGates = []string{backendsv1alpha1.SnapshotsReadyCondition}

// stateHistoryReconciler keeps the states of a backend in a second store:
// at each read (its own interval, or at once when the backend's probe
// sees a new serial or lineage) it copies a state it does not hold yet,
// and prunes the store by the history's retention.
type stateHistoryReconciler struct {
	reconciler
}

// newStateHistoryReconciler returns a reconciler that writes through c and
// reads Secrets through apiReader, which must not be a cache.
func newStateHistoryReconciler(c client.Client, apiReader client.Reader, recorder events.EventRecorder, opts ...Option) *stateHistoryReconciler {
	r := &stateHistoryReconciler{newReconciler(c, apiReader, recorder, opts)}
	r.forgetMetrics = r.metrics.forgetHistory
	return r
}

// newStateHistoryList returns an empty list of StateHistories.
func newStateHistoryList() client.ObjectList { return &backendsv1alpha1.StateHistoryList{} }

// historyScope collects what the phases of one reconciliation read and
// write.
type historyScope struct {
	// h is the object; phases set its status.
	h *backendsv1alpha1.StateHistory
	// source reads the workspace's state, failures are its kind's failure
	// classes, holder the lock holder its backend reports: filled by
	// reconcileHistorySource.
	source   func() (stateStreamer, error)
	failures []failureClass
	holder   *backendsv1alpha1.LockInfo
	// store builds the destination's client, filled by
	// reconcileHistoryDestination.
	store func() (history.Store, error)
	// inputs fingerprints everything a read depends on: a change makes
	// one due at once.
	inputs [][]byte
	// requeueAfter, probePending and applied are set by
	// reconcileSnapshots.
	requeueAfter time.Duration
	probePending bool
	applied      *probes.Result
}

// Reconcile resolves the source and the destination, then reads the
// source's state when a read is due and keeps it. Status is patched once,
// at the end.
func (r *stateHistoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	h := &backendsv1alpha1.StateHistory{}
	return r.reconcile(ctx, req, h, backendsv1alpha1.StateHistoryKind, func(ctx context.Context) (outcome, time.Duration, error) {
		s := &historyScope{h: h}
		h.Status.DestinationPrefix = historyPrefix(h)
		err := runPhases(ctx, s, r.reconcileHistorySource, r.reconcileHistoryDestination, r.reconcileSnapshots)
		return outcome{Outcome: conditions.Outcome{ReadyMessage: readyHistoryMessage(h), Gates: stateHistoryGates, ProbePending: s.probePending}, applied: s.applied},
			s.requeueAfter, err
	})
}

// setupWithManager registers the reconciler with mgr. The backends are
// watched for spec changes, and for a new serial or lineage their probe
// saw (which makes a read due at once); Secrets for metadata only, mapped
// to the histories whose source or destination references them.
func (r *stateHistoryReconciler) setupWithManager(mgr ctrl.Manager) error {
	c := watchReader(mgr)
	own, err := controllerFor(mgr, &backendsv1alpha1.StateHistory{}, predicate.GenerationChangedPredicate{})
	if err != nil {
		return err
	}
	b, err := r.setup(mgr, own)
	if err != nil {
		return err
	}
	for _, kind := range backendKinds {
		b = b.Watches(kind.newObject(), handler.EnqueueRequestsFromMapFunc(enqueueBackendReferrers(c, newStateHistoryList, kind.name())),
			builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, stateSeenChanged())))
	}
	// A history that leaves a prefix (deleted, or moved to another) frees
	// it for the histories it stalled with PrefixInUse.
	b = b.Watches(&backendsv1alpha1.StateHistory{}, handler.EnqueueRequestsFromMapFunc(historiesSharingPrefix(c)),
		builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(ctrlevent.CreateEvent) bool { return false },
			GenericFunc: func(ctrlevent.GenericEvent) bool { return false },
			UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
				return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() || !e.ObjectNew.GetDeletionTimestamp().IsZero()
			},
		}))
	return b.
		WatchesRawSource(r.opts.related.Source("Secret", referrersOf(backendsv1alpha1.StateHistoryKind, historiesOfReferenced(c, related.SecretReference)))).
		WatchesRawSource(r.opts.related.Source("ConfigMap", referrersOf(backendsv1alpha1.StateHistoryKind, historiesOfReferenced(c, related.ConfigMapReference)))).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.maxConcurrentReconciles}).
		Complete(r)
}

// stateSeenChanged passes a backend whose status.state has a new serial
// or lineage: its probe saw a state its histories may not hold.
func stateSeenChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(ctrlevent.CreateEvent) bool { return false },
		DeleteFunc:  func(ctrlevent.DeleteEvent) bool { return false },
		GenericFunc: func(ctrlevent.GenericEvent) bool { return false },
		UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
			before, ok1 := e.ObjectOld.(backendObject)
			after, ok2 := e.ObjectNew.(backendObject)
			return ok1 && ok2 && stateSeen(before) != stateSeen(after)
		},
	}
}

// stateSeen is the serial and lineage of the state a backend's last probe
// saw, "" when it saw none.
func stateSeen(b backendObject) string {
	st := b.SharedStatus().State
	if st == nil || !st.Present {
		return ""
	}
	return strconv.FormatInt(st.Serial, 10) + "/" + st.Lineage
}

// historiesSharingPrefix maps a history to the others of any namespace
// that write to the prefix it wrote to.
func historiesSharingPrefix(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		h, ok := obj.(*backendsv1alpha1.StateHistory)
		if !ok {
			return nil
		}
		list := &backendsv1alpha1.StateHistoryList{}
		if err := c.List(ctx, list, client.MatchingFields{historyPrefixIndex: historyPrefix(h)}, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		var requests []reconcile.Request
		for i := range list.Items {
			if list.Items[i].UID != h.UID {
				requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
		}
		return requests
	}
}

// historiesOfReferenced maps a Secret or a ConfigMap to the histories
// whose source or destination backend references it.
func historiesOfReferenced(c client.Reader, reference func(string) string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var requests []reconcile.Request
		for _, kind := range backendKinds {
			for _, backend := range writersAndReferrers(c, kind, reference)(ctx, obj) {
				requests = append(requests, indexedRequests(ctx, c, newStateHistoryList, backend.Namespace, backendRefIndex, backendRefValue(kind.name(), backend.Name))...)
			}
		}
		return requests
	}
}

// stateHistoryBackends is the backendRefIndex extractor of StateHistories:
// the source, and the destination's CosBackend.
func stateHistoryBackends(obj client.Object) []string {
	h, ok := obj.(*backendsv1alpha1.StateHistory)
	if !ok {
		return nil
	}
	return []string{
		backendRefValue(h.Spec.BackendRef.Kind, h.Spec.BackendRef.Name),
		backendRefValue(backendsv1alpha1.CosBackendKind, h.Spec.Destination.CosBackendRef.Name),
	}
}

// historyPrefix is the prefix a history writes under.
func historyPrefix(h *backendsv1alpha1.StateHistory) string {
	if h.Spec.Destination.Prefix != "" {
		return h.Spec.Destination.Prefix
	}
	return fmt.Sprintf("state-history/%s/%s", h.Namespace, h.Name)
}

// historyInterval is the interval between a history's reads.
func historyInterval(h *backendsv1alpha1.StateHistory, managerDefault time.Duration) time.Duration {
	if h.Spec.Interval != nil && h.Spec.Interval.Duration > 0 {
		return h.Spec.Interval.Duration
	}
	return managerDefault
}
