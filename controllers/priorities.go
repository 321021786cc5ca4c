package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// The priorities of the controllers' work queues. The events of new and
// changed objects come first (the default priority); what only keeps
// settled objects fresh waits behind them (handler.LowPriority): the
// first reconcile of the objects found Ready when the manager starts, and
// the requeues for a time (the next periodic probe, a retry at a time).
//
// When the manager starts, every object present is reconciled once: most
// of them were Ready before the restart and have not changed, and their
// reconcile only reads what it checks. Objects created or changed while
// the manager was away are work waiting for it; they are queued ahead of
// the settled ones, so that a cold start with many objects present brings
// the new ones to Ready first instead of in the order the list returned
// them. Their periodic probes, due meanwhile, wait behind them too, and
// behind the end of a probe (an event), whose result an object may still
// need to become Ready.

// settled reports whether obj's status says it is current and Ready: not
// being deleted, status.observedGeneration at its generation, and Ready
// True for that generation.
func settled(obj statusObject) bool {
	if !obj.GetDeletionTimestamp().IsZero() || *obj.StatusObservedGeneration() != obj.GetGeneration() {
		return false
	}
	ready := meta.FindStatusCondition(*obj.StatusConditions(), backendsv1alpha1.ReadyCondition)
	return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == obj.GetGeneration()
}

// firstListPriority is the priority of an object of a controller's first
// list: handler.LowPriority, after everything else, for a settled one
// (see settled), whose reconcile is a resync; the default priority, as for
// an object created later, for one that is new, changed, not Ready or
// being deleted.
//
// A settled object whose references changed while the manager was away
// is not told apart here (that takes the reads its reconcile does): it is
// reconciled after the others, as every settled one.
func firstListPriority(obj statusObject) int {
	if settled(obj) {
		return handler.LowPriority
	}
	return 0
}

// ownEvents enqueues an object of the controller's kind for its own
// events, as For's handler does, except that an object of the first list
// is queued at firstListPriority rather than all of them at low priority.
type ownEvents struct {
	handler.EnqueueRequestForObject
}

// Create queues obj; one of the first list at firstListPriority when the
// queue has priorities.
func (h *ownEvents) Create(ctx context.Context, e ctrlevent.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	pq, isPriorityQueue := q.(priorityqueue.PriorityQueue[reconcile.Request])
	obj, isStatusObject := e.Object.(statusObject)
	if !e.IsInInitialList || !isPriorityQueue || !isStatusObject {
		h.EnqueueRequestForObject.Create(ctx, e, q)
		return
	}
	pq.AddWithOpts(priorityqueue.AddOpts{Priority: new(firstListPriority(obj))},
		reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
}

// controllerFor starts the builder of the controller of obj's kind, named
// after the kind in lower case: what ctrl.NewControllerManagedBy(mgr).For(obj,
// builder.WithPredicates(predicates...)) starts, with the same logger, but
// with ownEvents as the handler of obj's events.
func controllerFor(mgr ctrl.Manager, obj statusObject, predicates ...predicate.Predicate) (*builder.Builder, error) {
	gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
	if err != nil {
		return nil, fmt.Errorf("finding the kind of %T: %w", obj, err)
	}
	name := strings.ToLower(gvk.Kind)
	log := mgr.GetLogger().WithValues("controller", name, "controllerGroup", gvk.Group, "controllerKind", gvk.Kind)
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		Watches(obj, &ownEvents{}, builder.WithPredicates(predicates...)).
		WithLogConstructor(func(req *reconcile.Request) logr.Logger {
			if req == nil {
				return log
			}
			return log.WithValues(gvk.Kind, klog.KRef(req.Namespace, req.Name), "namespace", req.Namespace, "name", req.Name)
		}), nil
}

// requeueAfter is the result of a reconcile that runs again after d, for
// a time: at low priority (see above), as every requeue for a time, while
// a retry after an error or a conflict keeps the priority it was queued
// at. 0 does not requeue.
func requeueAfter(d time.Duration) ctrl.Result {
	if d <= 0 {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: d, Priority: new(handler.LowPriority)}
}
