package controllers

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// producerIndex indexes, cluster-wide, the RemoteStates that read a
// backend of another namespace (spec.backendRef.namespace): by that
// namespace (producerValue), for the changes of its OutputGrants, and by
// the backend there (producerBackendValue), for the changes of the
// backend. A RemoteState of its own namespace has no entry.
const producerIndex = "spec.backendRef.producer"

// producerValue is the producerIndex value of the RemoteStates reading
// namespace.
func producerValue(namespace string) string { return namespace }

// producerBackendValue is the producerIndex value of the RemoteStates
// reading the backend kind/name of namespace.
func producerBackendValue(namespace, kind, name string) string {
	return namespace + "/" + backendRefValue(kind, name)
}

// producerOf is the namespace whose backend rs reads when it is another
// than its own, "" otherwise.
func producerOf(rs *backendsv1alpha1.RemoteState) string {
	if ns := rs.Spec.BackendRef.Namespace; ns != "" && ns != rs.Namespace {
		return ns
	}
	return ""
}

// remoteStateProducer is the producerIndex extractor.
func remoteStateProducer(obj client.Object) []string {
	rs, ok := obj.(*backendsv1alpha1.RemoteState)
	if !ok {
		return nil
	}
	producer := producerOf(rs)
	if producer == "" {
		return nil
	}
	ref := rs.Spec.BackendRef
	return []string{producerValue(producer), producerBackendValue(producer, ref.Kind, ref.Name)}
}
