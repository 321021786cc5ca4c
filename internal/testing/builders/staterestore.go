package builders

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// StateRestoreWrapper builds a StateRestore.
type StateRestoreWrapper struct{ obj backendsv1alpha1.StateRestore }

// MakeStateRestore starts the StateRestore namespace/name that writes the
// snapshot of serial kept by the StateHistory history back to its source,
// of the source's current lineage.
func MakeStateRestore(name, namespace, history string, serial int64) *StateRestoreWrapper {
	return &StateRestoreWrapper{obj: backendsv1alpha1.StateRestore{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: backendsv1alpha1.StateRestoreSpec{
			HistoryRef: backendsv1alpha1.LocalObjectReference{Name: history},
			Serial:     serial,
		},
	}}
}

// Obj returns the StateRestore built so far: the wrapper's own, which
// later setters change.
func (w *StateRestoreWrapper) Obj() *backendsv1alpha1.StateRestore { return &w.obj }

// Lineage sets spec.lineage, the lineage of the snapshot to restore.
func (w *StateRestoreWrapper) Lineage(lineage string) *StateRestoreWrapper {
	w.obj.Spec.Lineage = lineage
	return w
}

// AllowLineageChange sets spec.allowLineageChange: the snapshot may be of
// another lineage than the source's state.
func (w *StateRestoreWrapper) AllowLineageChange() *StateRestoreWrapper {
	w.obj.Spec.AllowLineageChange = true
	return w
}
