package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StateHistorySpec says whose state to keep, where, and for how long.
//
// +kubebuilder:validation:XValidation:rule="self.backendRef.kind != 'HttpBackend' || !has(self.workspace) || self.workspace == 'default'",message="workspace must be default for an HttpBackend: the http backend has no workspaces",fieldPath=".workspace"
type StateHistorySpec struct {
	// backendRef names the HttpBackend or CosBackend, in the same
	// namespace, whose state is kept: the source.
	// +required
	BackendRef BackendReference `json:"backendRef"`

	// workspace whose state is kept. The http backend only has "default".
	// +optional
	// +kubebuilder:default=default
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=90
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-._a-zA-Z0-9]+$')",message="workspace may contain only letters, digits, '-', '_' and '.'"
	// +kubebuilder:validation:XValidation:rule="self != '.' && self != '..'",message="workspace must not be '.' or '..'"
	Workspace string `json:"workspace,omitempty"`

	// destination is the object store the snapshots are written to.
	// +required
	Destination HistoryDestination `json:"destination"`

	// interval between two reads of the source's state, jittered by up to
	// 10%, counted from the end of the last one. A state is also read at
	// once when its backend's probe sees a new serial or lineage. Serials
	// written and overwritten between two reads are not kept:
	// status.skippedSerials lists them. Unset takes the manager's
	// --default-probe-interval (5m unless set). Between 10s and 24h.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('24h')",message="interval must be between 10s and 24h"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// retain bounds the snapshots kept under the prefix. Unset keeps the
	// newest 50.
	// +optional
	Retain *HistoryRetention `json:"retain,omitempty"`
}

// HistoryDestination is where a StateHistory writes its snapshots: a
// CosBackend's bucket, under a prefix of its own.
type HistoryDestination struct {
	// cosBackendRef names a CosBackend of the same namespace: its bucket,
	// region, endpoint and credentials are the destination's. Its own
	// state, prefix and key are not used.
	// +required
	CosBackendRef LocalObjectReference `json:"cosBackendRef"`

	// prefix of the snapshots' keys in the bucket:
	// <prefix>/<lineage>/<serial>-<sha256>.tfstate. Unset is
	// state-history/<namespace>/<name>. Two StateHistories must not share
	// one: the second reports PrefixInUse.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[-_a-zA-Z0-9][-._a-zA-Z0-9]*(/[-_a-zA-Z0-9][-._a-zA-Z0-9]*)*$`
	Prefix string `json:"prefix,omitempty"`
}

// LocalObjectReference names an object of the referring object's kind and
// namespace.
type LocalObjectReference struct {
	// name of the object, in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// HistoryRetention bounds the snapshots a StateHistory keeps. The newest
// snapshot is never pruned, whatever its age.
type HistoryRetention struct {
	// count is how many snapshots are kept, newest first. Unset keeps 50
	// when maxAge is unset too, and 1000 (the most) otherwise.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Count *int32 `json:"count,omitempty"`

	// maxAge prunes the snapshots taken longer ago than it.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="maxAge must be at least 1m"
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// StateSnapshot is one snapshot kept in the destination.
type StateSnapshot struct {
	// serial and lineage of the state the snapshot holds.
	Serial int64 `json:"serial"`
	// +kubebuilder:validation:MaxLength=1024
	Lineage string `json:"lineage"`

	// sizeBytes is the snapshot's size: the state's, byte for byte.
	SizeBytes int64 `json:"sizeBytes"`

	// sha256 is the hex SHA-256 of the state as it is stored.
	// +kubebuilder:validation:MaxLength=64
	SHA256 string `json:"sha256"`

	// key of the snapshot in the destination's bucket.
	// +kubebuilder:validation:MaxLength=1024
	Key string `json:"key"`

	// takenAt is when the state was read (for a snapshot found by listing
	// the prefix, when the object was written).
	TakenAt metav1.Time `json:"takenAt"`

	// holder is the lock holder the source's backend reported while the
	// snapshot was taken, when it reported one: who was writing.
	// +optional
	Holder *LockInfo `json:"holder,omitempty"`
}

// StateHistoryStatus is the observed state of a StateHistory.
type StateHistoryStatus struct {
	// conditions: Ready (True when the newest state read is kept),
	// SnapshotsReady, Reconciling and Stalled. SnapshotsReady's reason
	// says why a state is not kept: DestinationUnreachable,
	// DestinationRefused, DestinationFull, StateNotFound, or the source's
	// read failure.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes; -1 until
	// the controller has processed the object.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// snapshots are the newest snapshots kept, newest first: at most 20.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Snapshots []StateSnapshot `json:"snapshots,omitempty"`

	// snapshotCount is how many snapshots the prefix holds.
	// +optional
	SnapshotCount int32 `json:"snapshotCount,omitempty"`

	// skippedSerials are serials of the source's lineage that were
	// written and overwritten between two reads, so never kept: the
	// newest 100. Shorten spec.interval to keep more of them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	SkippedSerials []int64 `json:"skippedSerials,omitempty"`

	// destinationPrefix is the prefix the snapshots are written under.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DestinationPrefix string `json:"destinationPrefix,omitempty"`

	// lastReadTime is when the source's state was last read.
	// +optional
	LastReadTime *metav1.Time `json:"lastReadTime,omitempty"`
}

// StateHistoryKind is the kind of a StateHistory.
const StateHistoryKind = "StateHistory"

// StateHistory keeps every serial of a backend's state that the operator
// sees in a second store, lists the snapshots in its status, and lets a
// StateRestore write one back.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=shist,categories=infrastate
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backendRef.name`
// +kubebuilder:printcolumn:name="Snapshots",type=integer,JSONPath=`.status.snapshotCount`
// +kubebuilder:printcolumn:name="Newest",type=integer,JSONPath=`.status.snapshots[0].serial`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type StateHistory struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says whose state to keep, where, and for how long.
	// +required
	Spec StateHistorySpec `json:"spec"`

	// status is the observed state.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status StateHistoryStatus `json:"status,omitempty"`
}

// StateHistoryList is a list of StateHistory.
//
// +kubebuilder:object:root=true
type StateHistoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// items is the list of StateHistory.
	Items []StateHistory `json:"items"`
}

// StatusValue returns the status, for status patches.
func (in *StateHistory) StatusValue() any { return &in.Status }

// StatusConditions returns the conditions, for condition helpers.
func (in *StateHistory) StatusConditions() *[]metav1.Condition { return &in.Status.Conditions }

// StatusObservedGeneration returns the observed generation, for status helpers.
func (in *StateHistory) StatusObservedGeneration() *int64 { return &in.Status.ObservedGeneration }

func init() {
	register(&StateHistory{}, &StateHistoryList{})
}
