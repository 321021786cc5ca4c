package builders

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// RemoteStateWrapper builds a RemoteState.
type RemoteStateWrapper struct{ obj backendsv1alpha1.RemoteState }

// MakeRemoteState starts the RemoteState namespace/name that reads the
// outputs of the backend of kind (HttpBackend or CosBackend) named
// backend, in the workspace and to the objects the API defaults to.
func MakeRemoteState(name, namespace, kind, backend string) *RemoteStateWrapper {
	return &RemoteStateWrapper{obj: backendsv1alpha1.RemoteState{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: backendsv1alpha1.RemoteStateSpec{
			BackendRef: backendsv1alpha1.RemoteBackendReference{BackendReference: backendsv1alpha1.BackendReference{Kind: kind, Name: backend}},
		},
	}}
}

// Obj returns the RemoteState built so far: the wrapper's own, which later
// setters change.
func (w *RemoteStateWrapper) Obj() *backendsv1alpha1.RemoteState { return &w.obj }

// Created sets metadata.creationTimestamp.
func (w *RemoteStateWrapper) Created(at time.Time) *RemoteStateWrapper {
	w.obj.CreationTimestamp = metav1.NewTime(at)
	return w
}

// Workspace sets spec.workspace.
func (w *RemoteStateWrapper) Workspace(workspace string) *RemoteStateWrapper {
	w.obj.Spec.Workspace = workspace
	return w
}

// FromNamespace sets spec.backendRef.namespace: the backend is read in
// namespace, through its OutputGrants.
func (w *RemoteStateWrapper) FromNamespace(namespace string) *RemoteStateWrapper {
	w.obj.Spec.BackendRef.Namespace = namespace
	return w
}

// Outputs sets spec.outputs, the outputs to publish.
func (w *RemoteStateWrapper) Outputs(outputs ...backendsv1alpha1.OutputSelector) *RemoteStateWrapper {
	w.obj.Spec.Outputs = outputs
	return w
}

// Defaults sets spec.defaults, the values of outputs the state lacks.
func (w *RemoteStateWrapper) Defaults(defaults map[string]apiextensionsv1.JSON) *RemoteStateWrapper {
	w.obj.Spec.Defaults = defaults
	return w
}

// Target sets spec.target: the names of the ConfigMap and the Secret the
// outputs are published to; an empty name is the API's default.
func (w *RemoteStateWrapper) Target(configMap, secret string) *RemoteStateWrapper {
	w.obj.Spec.Target = backendsv1alpha1.RemoteStateTarget{ConfigMapName: configMap, SecretName: secret}
	return w
}

// ProbeInterval sets spec.probe.interval, how often the state is read
// again.
func (w *RemoteStateWrapper) ProbeInterval(d time.Duration) *RemoteStateWrapper {
	w.obj.Spec.Probe = &backendsv1alpha1.ProbeSpec{Interval: duration(d)}
	return w
}
