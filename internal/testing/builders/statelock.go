package builders

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// StateLockWrapper builds a StateLock.
type StateLockWrapper struct{ obj backendsv1alpha1.StateLock }

// MakeStateLock starts the StateLock namespace/name of the lock of the
// backend of kind (HttpBackend or CosBackend) named backend, holding
// nothing yet. The API requires a reason: set it with Reason.
func MakeStateLock(name, namespace, kind, backend string) *StateLockWrapper {
	return &StateLockWrapper{obj: backendsv1alpha1.StateLock{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: backendsv1alpha1.StateLockSpec{
			BackendRef: backendsv1alpha1.BackendReference{Kind: kind, Name: backend},
		},
	}}
}

// Obj returns the StateLock built so far: the wrapper's own, which later
// setters change.
func (w *StateLockWrapper) Obj() *backendsv1alpha1.StateLock { return &w.obj }

// Generation sets metadata.generation.
func (w *StateLockWrapper) Generation(g int64) *StateLockWrapper {
	w.obj.Generation = g
	return w
}

// UID sets metadata.uid.
func (w *StateLockWrapper) UID(uid types.UID) *StateLockWrapper {
	w.obj.UID = uid
	return w
}

// Created sets metadata.creationTimestamp.
func (w *StateLockWrapper) Created(at time.Time) *StateLockWrapper {
	w.obj.CreationTimestamp = metav1.NewTime(at)
	return w
}

// Annotation sets the annotation key to value.
func (w *StateLockWrapper) Annotation(key, value string) *StateLockWrapper {
	if w.obj.Annotations == nil {
		w.obj.Annotations = map[string]string{}
	}
	w.obj.Annotations[key] = value
	return w
}

// Finalizers sets metadata.finalizers.
func (w *StateLockWrapper) Finalizers(finalizers ...string) *StateLockWrapper {
	w.obj.Finalizers = finalizers
	return w
}

// Deleted sets metadata.deletionTimestamp: the StateLock is being deleted
// since at.
func (w *StateLockWrapper) Deleted(at time.Time) *StateLockWrapper {
	w.obj.DeletionTimestamp = new(metav1.NewTime(at))
	return w
}

// Workspace sets spec.workspace.
func (w *StateLockWrapper) Workspace(workspace string) *StateLockWrapper {
	w.obj.Spec.Workspace = workspace
	return w
}

// Reason sets spec.reason, which the lock's info carries.
func (w *StateLockWrapper) Reason(reason string) *StateLockWrapper {
	w.obj.Spec.Reason = reason
	return w
}

// Until sets spec.until, when the StateLock releases its lock.
func (w *StateLockWrapper) Until(at time.Time) *StateLockWrapper {
	w.obj.Spec.Until = new(metav1.NewTime(at))
	return w
}

// Holds records in status the lock info describes as held since it was
// created: status.lockID is info.ID, status.heldSince info.Created, and
// status.lockInfo info.
func (w *StateLockWrapper) Holds(info backendsv1alpha1.LockInfo) *StateLockWrapper {
	w.obj.Status.LockID, w.obj.Status.HeldSince, w.obj.Status.LockInfo = info.ID, info.Created, &info
	return w
}

// WaitsFor sets status.holder, the holder of the lock the StateLock
// waits for.
func (w *StateLockWrapper) WaitsFor(holder *backendsv1alpha1.LockInfo) *StateLockWrapper {
	w.obj.Status.Holder = holder
	return w
}

// ReacquireRequest sets status.reacquireRequest, the value of the
// reacquire annotation last acted on.
func (w *StateLockWrapper) ReacquireRequest(request string) *StateLockWrapper {
	w.obj.Status.ReacquireRequest = request
	return w
}

// Condition adds c to status.conditions.
func (w *StateLockWrapper) Condition(c metav1.Condition) *StateLockWrapper {
	w.obj.Status.Conditions = append(w.obj.Status.Conditions, c)
	return w
}
