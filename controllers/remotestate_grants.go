package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/grants"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/outputs"
)

// The RemoteStates that read a backend of another namespace: what that
// namespace's OutputGrants grant them, decided before anything of that
// namespace is read, and the withdrawal of what they no longer grant.

// reconcileGrant decides, for a RemoteState that reads a backend of
// another namespace, what that namespace's OutputGrants grant it, from
// the grants and the labels of its own namespace as the manager's cache
// holds them: nothing of the other namespace (its backend, Secrets or
// state) is read before. What the decision no longer allows is removed
// from the published ConfigMap and Secret at once (see revoke). Nothing
// granted is a stall with reason ReferenceNotGranted, whose message is
// the same whether or not the backend exists; so is an output spec.outputs
// selects that no grant names. It sets scope.grant, and OutputsReady
// when it stalls. A RemoteState of its own namespace is left alone.
func (r *remoteStateReconciler) reconcileGrant(ctx context.Context, s *remoteScope) error {
	remote := s.remote
	producer := producerOf(remote)
	if producer == "" {
		return nil
	}
	req := grantRequest(remote)
	if !r.opts.watches(producer) {
		// Its grants cannot be read: nothing is granted.
		if err := r.revoke(ctx, remote, producer, grants.Decision{}); err != nil {
			return err
		}
		return r.refuse(remote, backendsv1alpha1.NamespaceNotWatchedReason, notWatchedMessage(producer))
	}
	decision, err := r.decide(ctx, producer, req)
	if err != nil {
		return err
	}
	if decision.Granted() && len(ungrantedSelections(remote.Spec.Outputs, decision)) == 0 {
		forgetRefusal(remote)
	}
	if err := r.revoke(ctx, remote, producer, decision); err != nil {
		return err
	}
	if !decision.Granted() {
		return r.refuse(remote, backendsv1alpha1.ReferenceNotGrantedReason, notGrantedMessage(producer, req)+r.shardHint())
	}
	if names := ungrantedSelections(remote.Spec.Outputs, decision); len(names) > 0 {
		return r.refuse(remote, backendsv1alpha1.ReferenceNotGrantedReason, ungrantedSelectionsMessage(producer, req, names, decision))
	}
	s.grant = &decision
	return nil
}

// refuse stops a read of remote's state under way, sets OutputsReady
// False with reason and message, and returns them as a stall: the watches
// on grants and namespaces bring the object back, and it is read again at
// once when they grant it again.
func (r *remoteStateReconciler) refuse(remote *backendsv1alpha1.RemoteState, reason, message string) error {
	key := client.ObjectKeyFromObject(remote)
	r.probes.Forget(probes.Key{Kind: backendsv1alpha1.RemoteStateKind, NamespacedName: key})
	r.schedule.Expire(key)
	conditions.Set(&remote.Status.Conditions, remote.Generation, backendsv1alpha1.OutputsReadyCondition,
		conditions.Observation{Status: metav1.ConditionFalse, Reason: reason, Message: message})
	return conditions.Stall(reason, "%s", message)
}

// forgetRefusal removes the OutputsReady of remote's last refusal (see
// refuse), which no longer holds: it describes no read, and a read of
// this generation is due at once, not at a random point of the interval
// as after a restart (see probeStep).
func forgetRefusal(remote *backendsv1alpha1.RemoteState) {
	stalled := meta.FindStatusCondition(remote.Status.Conditions, backendsv1alpha1.StalledCondition)
	outputsReady := meta.FindStatusCondition(remote.Status.Conditions, backendsv1alpha1.OutputsReadyCondition)
	if stalled == nil || outputsReady == nil || stalled.Reason != outputsReady.Reason {
		return
	}
	if outputsReady.Reason == backendsv1alpha1.ReferenceNotGrantedReason || outputsReady.Reason == backendsv1alpha1.NamespaceNotWatchedReason {
		meta.RemoveStatusCondition(&remote.Status.Conditions, backendsv1alpha1.OutputsReadyCondition)
	}
}

// decide returns what the OutputGrants of producer grant req, with the
// labels of the consumer's namespace where the manager may watch
// namespaces (see nslabels), by namespace name only where it may not.
func (r *remoteStateReconciler) decide(ctx context.Context, producer string, req grants.Request) (grants.Decision, error) {
	list := &backendsv1alpha1.OutputGrantList{}
	// grants.Decide only reads them: the cache's objects need no copy.
	if err := r.client.List(ctx, list, client.InNamespace(producer), client.UnsafeDisableDeepCopy); err != nil {
		return grants.Decision{}, fmt.Errorf("listing the OutputGrants of namespace %s: %w", producer, err)
	}
	labels, err := r.opts.labeler().Labels(req.Consumer)
	req.ConsumerLabels, req.LabelsUnknown = labels, err != nil
	return grants.Decide(list.Items, req), nil
}

// revoke removes from the ConfigMap and the Secret remote published the
// outputs d no longer allows, as status.outputs tells which key holds
// which output and whether it is sensitive: the state is not read, and
// nothing is removed that d still allows. It reads the two objects only
// when something is to be removed (or status.outputs may not list every
// key), and only when remote controls them. status.outputs keeps what
// stays; a Warning event names what was removed. (Nothing granted is a
// stall that says why; a narrower grant is read again at once, and
// OutputsReady then says what it grants.)
func (r *remoteStateReconciler) revoke(ctx context.Context, remote *backendsv1alpha1.RemoteState, producer string, d grants.Decision) error {
	rendered := remote.Status.Rendered
	plan := revocationOf(remote.Status.Outputs, len(remote.Status.Outputs) < maxOutputStatuses, d)
	if rendered == nil || !plan.needed() {
		return nil
	}
	owner := ownerOf(remote, backendsv1alpha1.RemoteStateKind)
	w := r.rewriter(true) // it published before: status.rendered names its objects
	secret := &corev1.Secret{}
	switch found, err := r.readPublished(ctx, remote, rendered.SecretName, secret); {
	case err != nil:
		return err
	case found:
		if _, err := w.ApplySecret(ctx, outputs.Secret(owner, rendered.SecretName, plan.sensitive(secret.Data))); err != nil {
			return err
		}
	}
	cm := &corev1.ConfigMap{}
	switch found, err := r.readPublished(ctx, remote, rendered.ConfigMapName, cm); {
	case err != nil:
		return err
	case found:
		if _, err := w.ApplyConfigMap(ctx, outputs.ConfigMap(owner, rendered.ConfigMapName, plan.plain(cm.Data))); err != nil {
			return err
		}
	}
	remote.Status.Outputs = plan.kept
	if len(plan.removed) > 0 {
		// A grant that grants them again has them read again at once,
		// even one that grants what the last read was made under.
		r.schedule.Expire(client.ObjectKeyFromObject(remote))
		r.events.Eventf(remote, nil, corev1.EventTypeWarning, backendsv1alpha1.ReferenceNotGrantedReason, "Revoke", "%s",
			revokedMessage(producer, plan.removed, rendered.ConfigMapName, rendered.SecretName))
	}
	return nil
}

// readPublished reads into obj (a Secret or a ConfigMap) the object name
// remote published to, from the API server, when remote controls it:
// its metadata decides first, so that the content of someone else's
// object is never read. found is false when it is absent or not remote's.
func (r *remoteStateReconciler) readPublished(ctx context.Context, remote *backendsv1alpha1.RemoteState, name string, obj client.Object) (found bool, err error) {
	kind := "Secret"
	if _, ok := obj.(*corev1.ConfigMap); ok {
		kind = "ConfigMap"
	}
	key := types.NamespacedName{Namespace: remote.Namespace, Name: name}
	held := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind}}
	switch err := r.metadata.Get(ctx, key, held); {
	case apierrors.IsNotFound(err):
		m, found, err := related.MetadataFromAPI(ctx, r.apiReader, r.metadata, kind, key)
		if err != nil || !found {
			return false, err
		}
		held = m
	case err != nil:
		return false, fmt.Errorf("reading the metadata of %s %s: %w", kind, key, err)
	}
	if ref := metav1.GetControllerOfNoCopy(held); ref == nil || ref.UID != remote.UID {
		return false, nil
	}
	switch err := r.apiReader.Get(ctx, key, obj); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %s %s: %w", kind, key, err)
	}
	return true, nil
}

// readersOfGrants maps an OutputGrant to the RemoteStates, of any
// namespace, that read a backend of its namespace: a grant created,
// changed or deleted decides again what they may publish.
func readersOfGrants(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		return indexedRequests(ctx, c, newRemoteStateList, metav1.NamespaceAll, producerIndex, producerValue(obj.GetNamespace()))
	}
}

// readersOfProducerBackend maps a backend of kind to the RemoteStates of
// other namespaces that read it.
func readersOfProducerBackend(ctx context.Context, c client.Reader, kind, namespace, name string) []reconcile.Request {
	return indexedRequests(ctx, c, newRemoteStateList, metav1.NamespaceAll, producerIndex, producerBackendValue(namespace, kind, name))
}

// grantChanged lets through the events of an OutputGrant that change what
// it grants: its creation and deletion, a new generation of its spec, and
// the start of its deletion (a grant being deleted grants nothing). The
// updates of its status, which its consumers make change, do not.
func grantChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
			e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
}

// crossNamespaceReadersIn maps a Namespace, whose labels changed, to its
// RemoteStates that read a backend of another namespace: a selector of a
// grant may match it now, or no longer.
func crossNamespaceReadersIn(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		list := &backendsv1alpha1.RemoteStateList{}
		// Only the specs are read: the cache's objects need no copy.
		if err := c.List(ctx, list, client.InNamespace(obj.GetName()), client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		var requests []reconcile.Request
		for i := range list.Items {
			if producerOf(&list.Items[i]) != "" {
				requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
		}
		return requests
	}
}
