package controllers

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/infrastate/backend-operator/controllers/internal/related"
)

// referrersOf enqueues, for every event of a Secret or ConfigMap, the
// objects of kind that find maps it to, except, for its creation, the one
// object of kind that controls it. That creation is its own doing: the
// reconcile that created it holds everything it would learn from the
// event, and reconciling it again would render and patch status twice per
// object (the second patch meeting a cache that has not seen the first
// one yet: a conflict). Its changes and deletion, which someone else may
// have made, reconcile it; and another object that references it is
// reconciled on its creation too, which may clear its stall.
//
// Every event is a change, queued at the default priority: the related
// watches deliver an update with the new object as its old one too, which
// handler.Funcs would take for a resync and queue at low priority.
func referrersOf(kind string, find handler.MapFunc) handler.EventHandler {
	return referrers{kind: kind, find: find}
}

// referrers is the handler referrersOf returns.
type referrers struct {
	kind string
	find handler.MapFunc
}

// enqueue queues the objects find maps obj to, but obj's writer when it
// was created.
func (h referrers) enqueue(ctx context.Context, obj client.Object, created bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	var writer string
	if created {
		writer = controllerOfKind(obj, h.kind)
	}
	for _, req := range h.find(ctx, obj) {
		if writer != "" && req.Namespace == obj.GetNamespace() && req.Name == writer {
			continue
		}
		q.Add(req)
	}
}

// Create queues the referrers of a new object, but its writer.
func (h referrers) Create(ctx context.Context, e ctrlevent.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.Object, true, q)
}

// Update queues the referrers of a changed object.
func (h referrers) Update(ctx context.Context, e ctrlevent.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.ObjectNew, false, q)
}

// Delete queues the referrers of a deleted object.
func (h referrers) Delete(ctx context.Context, e ctrlevent.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.Object, false, q)
}

// Generic queues the referrers of obj.
func (h referrers) Generic(ctx context.Context, e ctrlevent.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.Object, false, q)
}

// controllerOfKind is the name of obj's controller when it is an object of
// kind of this API, "" otherwise.
func controllerOfKind(obj metav1.Object, kind string) string {
	ref := related.ControllerOfThisAPI(obj)
	if ref == nil || ref.Kind != kind {
		return ""
	}
	return ref.Name
}
