package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StateLockSpec describes the state lock to hold.
//
// +kubebuilder:validation:XValidation:rule="self.backendRef.kind != 'HttpBackend' || !has(self.workspace) || self.workspace == 'default'",message="workspace must be default for an HttpBackend: the http backend has no workspaces",fieldPath=".workspace"
type StateLockSpec struct {
	// backendRef names the HttpBackend or CosBackend, in the same
	// namespace, whose state lock to hold. An HttpBackend needs
	// lockAddress and unlockAddress. It cannot change: delete the
	// StateLock, which releases its lock, and create another.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="backendRef cannot change: delete this StateLock (which releases its lock) and create another"
	BackendRef BackendReference `json:"backendRef"`

	// workspace whose lock to hold. The http backend only has "default".
	// It cannot change.
	// +optional
	// +kubebuilder:default=default
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=90
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-._a-zA-Z0-9]+$')",message="workspace may contain only letters, digits, '-', '_' and '.'"
	// +kubebuilder:validation:XValidation:rule="self != '.' && self != '..'",message="workspace must not be '.' or '..': they would reach objects outside the backend's prefix"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="workspace cannot change: delete this StateLock (which releases its lock) and create another"
	Workspace string `json:"workspace,omitempty"`

	// reason is shown to whoever meets the lock: it is the Info of the
	// lock's LockInfo. It is recorded when the lock is taken: changing it
	// while the lock is held changes nothing on the server (a held lock
	// cannot be rewritten without releasing it, which would let a run in).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason"`

	// until is when the lock ends: after it the operator releases the lock
	// and reports the StateLock Expired, keeping the object for the
	// record. Unset holds the lock until the StateLock is deleted.
	// +optional
	Until *metav1.Time `json:"until,omitempty"`
}

// StateLockStatus is the observed state of a StateLock.
type StateLockStatus struct {
	// conditions: Ready (True while the lock is held), Reconciling and
	// Stalled. Ready's reason says why the lock is not held:
	// WaitingForLock, LockLost, Expired.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes; -1 until
	// the controller has processed the object.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// lockID is the ID of the lock the StateLock holds, as the backend
	// reports it to whoever meets it (and as forceUnlock.lockID and
	// terraform force-unlock take it). Empty while it holds none.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	LockID string `json:"lockID,omitempty"`

	// heldSince is when the lock was taken.
	// +optional
	HeldSince *metav1.Time `json:"heldSince,omitempty"`

	// lockInfo is the LockInfo the StateLock wrote when it took the lock;
	// releasing the lock sends it back, as Terraform does.
	// +optional
	LockInfo *LockInfo `json:"lockInfo,omitempty"`

	// holder is the lock's holder when another holds it: the one the
	// StateLock waits for, or the one that took the lock it lost.
	// +optional
	Holder *LockInfo `json:"holder,omitempty"`

	// reacquireRequest is the last value of the
	// backends.infrastate.io/reacquire annotation the controller acted on:
	// the value itself, or "sha256:" and the hex SHA-256 of the value when
	// it is longer than 256 bytes or itself starts with "sha256:".
	// +optional
	// +kubebuilder:validation:MaxLength=256
	ReacquireRequest string `json:"reacquireRequest,omitempty"`
}

// ReacquireAnnotation asks a StateLock that lost its lock (LockLost) to
// take it again: set it to a new value, such as the current time. A spec
// change does the same.
const ReacquireAnnotation = "backends.infrastate.io/reacquire"

// StateLockFinalizer is the finalizer that releases a StateLock's lock
// before the object goes away.
const StateLockFinalizer = "backends.infrastate.io/release-lock"

// BackendProtectionFinalizer is the finalizer a backend carries while a
// StateLock names it, as a PersistentVolumeClaim in use carries
// kubernetes.io/pvc-protection: a deleted backend goes away only once no
// StateLock holds its lock, so that every lock a StateLock took is
// released through the backend that took it.
const BackendProtectionFinalizer = "backends.infrastate.io/statelock-protection"

// StateLockKind is the kind of a StateLock, as an object's TypeMeta spells
// it.
const StateLockKind = "StateLock"

// StateLock holds the state lock of a backend's workspace, declaratively:
// a change freeze that opens and closes through git. While it exists and
// has not expired, Terraform and OpenTofu runs meet the lock.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=slock,categories=infrastate
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backendRef.name`
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.backendRef.kind`,priority=1
// +kubebuilder:printcolumn:name="Workspace",type=string,JSONPath=`.spec.workspace`,priority=1
// +kubebuilder:printcolumn:name="Held",type=date,JSONPath=`.status.heldSince`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Lock ID",type=string,JSONPath=`.status.lockID`,priority=1
// +kubebuilder:printcolumn:name="Until",type=string,JSONPath=`.spec.until`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type StateLock struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec describes the lock to hold.
	// +required
	Spec StateLockSpec `json:"spec"`

	// status is the observed state.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status StateLockStatus `json:"status,omitempty"`
}

// StateLockList is a list of StateLock.
//
// +kubebuilder:object:root=true
type StateLockList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// items is the list of StateLock.
	Items []StateLock `json:"items"`
}

// StatusValue returns the status, for status patches.
func (in *StateLock) StatusValue() any { return &in.Status }

// StatusConditions returns the conditions, for condition helpers.
func (in *StateLock) StatusConditions() *[]metav1.Condition { return &in.Status.Conditions }

// StatusObservedGeneration returns the observed generation, for status helpers.
func (in *StateLock) StatusObservedGeneration() *int64 { return &in.Status.ObservedGeneration }

func init() {
	register(&StateLock{}, &StateLockList{})
}
