package controllers

import (
	"context"
	"slices"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
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
	"github.com/infrastate/backend-operator/controllers/internal/grants"
	"github.com/infrastate/backend-operator/controllers/internal/related"
)

// The permissions of the OutputGrant reconciler: it reads the grants and
// writes their status, and watches the labels of namespaces, which its
// namespace selectors match (see nslabels: without the right, it never
// asks).
//
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=outputgrants,verbs=get;list;watch
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=outputgrants/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list;watch

// outputGrantReconciler reports, on each OutputGrant, the RemoteStates of
// other namespaces that read through it and the outputs it grants them:
// who consumes what. It grants nothing itself: a RemoteState decides what
// it may read from the grants of the namespace it reads, as they are.
type outputGrantReconciler struct {
	reconciler
	// labels gives the labels of the consumer namespaces.
	labels namespaceLabeler
}

// newOutputGrantReconciler returns the reconciler of OutputGrants, writing
// through c.
func newOutputGrantReconciler(c client.Client, apiReader client.Reader, recorder events.EventRecorder, opts ...Option) *outputGrantReconciler {
	r := &outputGrantReconciler{reconciler: newReconciler(c, apiReader, recorder, opts), labels: noNamespaceLabels{}}
	if r.opts.namespaceLabels != nil {
		r.labels = r.opts.namespaceLabels
	}
	return r
}

// ograntScope collects what the phases of one reconciliation read and
// write.
type ograntScope struct {
	// grant is the OutputGrant; phases set its status.
	grant *backendsv1alpha1.OutputGrant
	// labelsErr says why some consumer namespace's labels are unknown,
	// set by reconcileConsumers.
	labelsErr error
	// outcome is what Ready says, set by reconcileNamespaces.
	outcome conditions.Outcome
}

// Reconcile lists the grant's consumers, checks its selectors, and says
// which namespaces it cannot serve. Status is patched once, at the end,
// and only when it changed.
func (r *outputGrantReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	grant := &backendsv1alpha1.OutputGrant{}
	return r.reconcile(ctx, req, grant, backendsv1alpha1.OutputGrantKind, func(ctx context.Context) (outcome, time.Duration, error) {
		s := &ograntScope{grant: grant}
		err := runPhases(ctx, s, r.reconcileConsumers, r.reconcileNamespaces, r.reconcileSelectors)
		return outcome{Outcome: s.outcome}, 0, err
	})
}

// reconcileConsumers sets status.consumers and status.consumerCount: the
// RemoteStates of any namespace that read a backend of the grant's
// namespace (producerIndex) and that the grant covers.
func (r *outputGrantReconciler) reconcileConsumers(ctx context.Context, s *ograntScope) error {
	readers := &backendsv1alpha1.RemoteStateList{}
	if err := r.client.List(ctx, readers, client.MatchingFields{producerIndex: producerValue(s.grant.Namespace)}); err != nil {
		return err //nolint:wrapcheck // the cache's error names the list
	}
	consumers, count, labelsErr := grantConsumers(s.grant, readers.Items, r.labels)
	s.grant.Status.Consumers, s.grant.Status.ConsumerCount, s.labelsErr = consumers, count, labelsErr
	return nil
}

// reconcileNamespaces sets what Ready says (see grantOutcome): what the
// grant grants, to how many RemoteStates, and the namespaces of spec.to
// it cannot serve.
func (r *outputGrantReconciler) reconcileNamespaces(_ context.Context, s *ograntScope) error {
	s.outcome = grantOutcome(s.grant, r.opts.watchNamespaces, s.labelsErr)
	return nil
}

// reconcileSelectors stalls a grant whose selectors do not parse: they
// match no namespace until the spec is fixed. The status still lists the
// consumers its other entries serve.
func (r *outputGrantReconciler) reconcileSelectors(_ context.Context, s *ograntScope) error {
	if invalid := grants.InvalidSelectors(s.grant.Spec.To); len(invalid) > 0 {
		return conditions.Stall(backendsv1alpha1.InvalidSpecReason, "%s: %s",
			plural(len(invalid), "This selector matches no namespace", "These selectors match no namespace"), strings.Join(invalid, "; "))
	}
	return nil
}

// setupWithManager registers the reconciler with mgr; the field indexes
// come from SetupAll. A grant is reconciled on spec changes, when a
// RemoteState reading its namespace appears, goes, changes its spec or
// publishes other outputs, and, for a grant with a namespace selector,
// when a namespace's labels change.
func (r *outputGrantReconciler) setupWithManager(mgr ctrl.Manager) error {
	c := watchReader(mgr)
	b, err := controllerFor(mgr, &backendsv1alpha1.OutputGrant{}, predicate.GenerationChangedPredicate{})
	if err != nil {
		return err
	}
	b = b.Watches(&backendsv1alpha1.RemoteState{}, handler.EnqueueRequestsFromMapFunc(grantsOfProducer(c, r.opts.watchNamespaces)),
		builder.WithPredicates(consumerChanged()))
	if r.opts.namespaceLabels != nil {
		b = b.WatchesRawSource(r.opts.namespaceLabels.Source(handler.EnqueueRequestsFromMapFunc(grantsWithSelectors(c))))
	}
	return b.
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.maxConcurrentReconciles}).
		Complete(r)
}

// grantsOfProducer maps a RemoteState to the grants of the namespace
// whose backend it reads, when that is another one the manager watches
// (all when watched is empty).
func grantsOfProducer(c client.Reader, watched []string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		rs, ok := obj.(*backendsv1alpha1.RemoteState)
		if !ok {
			return nil
		}
		producer := producerOf(rs)
		if producer == "" || (len(watched) > 0 && !slices.Contains(watched, producer)) {
			return nil
		}
		return listedRequests(ctx, c, &backendsv1alpha1.OutputGrantList{}, client.InNamespace(producer))
	}
}

// grantsWithSelectors maps a namespace whose labels changed to the grants
// that select namespaces by label: the few a relabelling may concern.
func grantsWithSelectors(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		list := &backendsv1alpha1.OutputGrantList{}
		if err := c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		var requests []reconcile.Request
		for i := range list.Items {
			if slices.ContainsFunc(list.Items[i].Spec.To, func(c backendsv1alpha1.GrantConsumer) bool { return c.NamespaceSelector != nil }) {
				requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
		}
		return requests
	}
}

// listedRequests lists the objects of list's kind with opts, and returns a
// request for each; none when the list fails.
func listedRequests(ctx context.Context, c client.Reader, list client.ObjectList, opts ...client.ListOption) []reconcile.Request {
	if err := c.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return nil
	}
	var requests []reconcile.Request
	_ = related.ForEachObject(list, func(o client.Object) {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
	})
	return requests
}

// consumerChanged passes the creation and deletion of a RemoteState, and
// the updates that change its spec (what it reads, where) or the outputs
// it published (what its grants' status lists).
func consumerChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*backendsv1alpha1.RemoteState)
		after, ok2 := e.ObjectNew.(*backendsv1alpha1.RemoteState)
		if !ok1 || !ok2 {
			return false
		}
		return before.Generation != after.Generation || !apiequality.Semantic.DeepEqual(before.Status.Outputs, after.Status.Outputs) ||
			before.DeletionTimestamp.IsZero() != after.DeletionTimestamp.IsZero()
	}}
}
