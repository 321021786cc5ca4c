package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StateRestoreSpec names the snapshot to write back. It cannot change: a
// restore runs once, like a Job; create another to restore again.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a StateRestore cannot change: create another"
type StateRestoreSpec struct {
	// historyRef names the StateHistory, in the same namespace, whose
	// snapshot is restored to its source.
	// +required
	HistoryRef LocalObjectReference `json:"historyRef"`

	// serial of the snapshot to restore.
	// +required
	// +kubebuilder:validation:Minimum=0
	Serial int64 `json:"serial"`

	// lineage of the snapshot to restore, when snapshots of several
	// lineages have the serial. Unset is the source's current lineage.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Lineage string `json:"lineage,omitempty"`

	// allowLineageChange lets the restore write a snapshot whose lineage
	// is not the source's current lineage (or to a source that holds no
	// state). Without it such a restore is refused: it would replace one
	// stack's state with another's.
	// +optional
	AllowLineageChange bool `json:"allowLineageChange,omitempty"`
}

// RestoredSnapshot is the snapshot a StateRestore wrote back.
type RestoredSnapshot struct {
	// serial, lineage and sha256 of the snapshot, and its key in the
	// history's destination.
	Serial int64 `json:"serial"`
	// +kubebuilder:validation:MaxLength=1024
	Lineage string `json:"lineage"`
	// +kubebuilder:validation:MaxLength=64
	SHA256 string `json:"sha256"`
	// +kubebuilder:validation:MaxLength=1024
	Key string `json:"key"`
}

// StateRestoreStatus is the observed state of a StateRestore.
type StateRestoreStatus struct {
	// conditions: Restored, Ready (True once the snapshot is written),
	// Reconciling and Stalled. Their reason says what the restore waits
	// for or why it is refused: WaitingForLock, SnapshotNotFound,
	// SnapshotUnusable, LineageMismatch, StateEncrypted.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes; -1 until
	// the controller has processed the object.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// writtenSerial is the serial the snapshot was written under: above
	// the source's serial when the restore ran.
	// +optional
	WrittenSerial int64 `json:"writtenSerial,omitempty"`

	// restoredFrom is the snapshot written.
	// +optional
	RestoredFrom *RestoredSnapshot `json:"restoredFrom,omitempty"`

	// completionTime is when the snapshot was written.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// holder is the lock's holder while the restore waits for it.
	// +optional
	Holder *LockInfo `json:"holder,omitempty"`
}

// StateRestoreKind is the kind of a StateRestore.
const StateRestoreKind = "StateRestore"

// StateRestore writes a snapshot of a StateHistory back to its source,
// once: under the source's state lock, as a new serial above the current
// one.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=srestore,categories=infrastate
// +kubebuilder:printcolumn:name="History",type=string,JSONPath=`.spec.historyRef.name`
// +kubebuilder:printcolumn:name="Serial",type=integer,JSONPath=`.spec.serial`
// +kubebuilder:printcolumn:name="Written",type=integer,JSONPath=`.status.writtenSerial`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type StateRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the snapshot to restore.
	// +required
	Spec StateRestoreSpec `json:"spec"`

	// status is the observed state.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status StateRestoreStatus `json:"status,omitempty"`
}

// StateRestoreList is a list of StateRestore.
//
// +kubebuilder:object:root=true
type StateRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// items is the list of StateRestore.
	Items []StateRestore `json:"items"`
}

// StatusValue returns the status, for status patches.
func (in *StateRestore) StatusValue() any { return &in.Status }

// StatusConditions returns the conditions, for condition helpers.
func (in *StateRestore) StatusConditions() *[]metav1.Condition { return &in.Status.Conditions }

// StatusObservedGeneration returns the observed generation, for status helpers.
func (in *StateRestore) StatusObservedGeneration() *int64 { return &in.Status.ObservedGeneration }

func init() {
	register(&StateRestore{}, &StateRestoreList{})
}
