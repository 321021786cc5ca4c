package nslabels

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Source is the source of a controller's events of namespaces whose
// labels became known or changed: it hands each to h, as a creation (the
// namespace's labels are new to the controller) or a deletion.
type Source struct {
	watch *Watch
	h     handler.EventHandler
}

// Source returns the controller Source of the watch's events for h.
func (w *Watch) Source(h handler.EventHandler) Source { return Source{watch: w, h: h} }

// Start registers the handler with the watch.
func (s Source) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.watch.AddHandler(func(ns *metav1.PartialObjectMetadata, deleted bool) {
		if deleted {
			s.h.Delete(ctx, ctrlevent.DeleteEvent{Object: ns}, q)
			return
		}
		s.h.Create(ctx, ctrlevent.CreateEvent{Object: ns}, q)
	})
	return nil
}

// WaitForSync waits until the labels are known, or known to be unknown:
// the controller's workers then start with the labels they can have.
func (s Source) WaitForSync(ctx context.Context) error { return s.watch.WaitForSettled(ctx) }
