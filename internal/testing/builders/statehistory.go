package builders

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// StateHistoryWrapper builds a StateHistory.
type StateHistoryWrapper struct{ obj backendsv1alpha1.StateHistory }

// MakeStateHistory starts the StateHistory namespace/name that keeps the
// state of the backend of kind (HttpBackend or CosBackend) named backend
// in the bucket of the CosBackend destination, under the prefix, interval
// and retention the API defaults to.
func MakeStateHistory(name, namespace, kind, backend, destination string) *StateHistoryWrapper {
	return &StateHistoryWrapper{obj: backendsv1alpha1.StateHistory{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: backendsv1alpha1.StateHistorySpec{
			BackendRef:  backendsv1alpha1.BackendReference{Kind: kind, Name: backend},
			Destination: backendsv1alpha1.HistoryDestination{CosBackendRef: backendsv1alpha1.LocalObjectReference{Name: destination}},
		},
	}}
}

// Obj returns the StateHistory built so far: the wrapper's own, which
// later setters change.
func (w *StateHistoryWrapper) Obj() *backendsv1alpha1.StateHistory { return &w.obj }

// Created sets metadata.creationTimestamp.
func (w *StateHistoryWrapper) Created(at time.Time) *StateHistoryWrapper {
	w.obj.CreationTimestamp = metav1.NewTime(at)
	return w
}

// Workspace sets spec.workspace.
func (w *StateHistoryWrapper) Workspace(workspace string) *StateHistoryWrapper {
	w.obj.Spec.Workspace = workspace
	return w
}

// Prefix sets spec.destination.prefix, the prefix of the snapshots' keys.
func (w *StateHistoryWrapper) Prefix(prefix string) *StateHistoryWrapper {
	w.obj.Spec.Destination.Prefix = prefix
	return w
}

// Interval sets spec.interval, the time between two reads of the state.
func (w *StateHistoryWrapper) Interval(d time.Duration) *StateHistoryWrapper {
	w.obj.Spec.Interval = duration(d)
	return w
}

// RetainCount sets spec.retain.count, how many snapshots are kept.
func (w *StateHistoryWrapper) RetainCount(count int32) *StateHistoryWrapper {
	w.retain().Count = &count
	return w
}

// RetainMaxAge sets spec.retain.maxAge, the age past which snapshots are
// pruned.
func (w *StateHistoryWrapper) RetainMaxAge(d time.Duration) *StateHistoryWrapper {
	w.retain().MaxAge = duration(d)
	return w
}

func (w *StateHistoryWrapper) retain() *backendsv1alpha1.HistoryRetention {
	if w.obj.Spec.Retain == nil {
		w.obj.Spec.Retain = &backendsv1alpha1.HistoryRetention{}
	}
	return w.obj.Spec.Retain
}
