package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OutputGrantSpec says which outputs of which backends of its namespace
// the RemoteStates of which other namespaces may read. Nothing crosses a
// namespace boundary unless a grant in the producer's namespace says so;
// deleting or narrowing the grant takes effect within seconds.
type OutputGrantSpec struct {
	// backends whose outputs may be read, in this namespace. Empty grants
	// every backend of the namespace.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Backends []BackendReference `json:"backends,omitempty"`

	// workspaces that may be read. Empty grants every workspace.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=90
	// +kubebuilder:validation:items:Pattern=`^[-._a-zA-Z0-9]+$`
	Workspaces []string `json:"workspaces,omitempty"`

	// to names the consumer namespaces: each entry one namespace by name,
	// or the namespaces whose labels a selector matches. At least one.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	To []GrantConsumer `json:"to"`

	// outputs granted, by name. Empty grants every non-sensitive output;
	// a sensitive output is granted only when sensitiveOutputs names it.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=512
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	// +kubebuilder:validation:items:Pattern=`^[a-zA-Z_][-a-zA-Z0-9_]*$`
	Outputs []string `json:"outputs,omitempty"`

	// sensitiveOutputs are the sensitive outputs granted, by name only:
	// they are published to the consumer's Secret. Never implied.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=512
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	// +kubebuilder:validation:items:Pattern=`^[a-zA-Z_][-a-zA-Z0-9_]*$`
	SensitiveOutputs []string `json:"sensitiveOutputs,omitempty"`
}

// GrantConsumer names consumer namespaces: exactly one of namespace and
// namespaceSelector.
//
// +kubebuilder:validation:XValidation:rule="has(self.namespace) != has(self.namespaceSelector)",message="set exactly one of namespace and namespaceSelector"
type GrantConsumer struct {
	// namespace granted, by name.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`

	// namespaceSelector grants every namespace whose labels it matches,
	// as they are labelled now: relabelling a namespace grants or revokes
	// within seconds. An empty selector matches every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// GrantConsumerStatus is one RemoteState that reads through the grant.
type GrantConsumerStatus struct {
	// namespace and name of the RemoteState.
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// backend it reads, in the grant's namespace.
	Backend BackendReference `json:"backend"`

	// outputs it is granted and publishes.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=512
	// +kubebuilder:validation:items:MaxLength=128
	Outputs []string `json:"outputs,omitempty"`
}

// OutputGrantStatus is the observed state of an OutputGrant.
type OutputGrantStatus struct {
	// conditions: Ready, Reconciling and Stalled. Ready is False with
	// reason NamespaceNotWatched when a namespace of spec.to is outside
	// the namespaces the manager watches.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes; -1 until
	// the controller has processed the object.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// consumers are the RemoteStates that read through this grant, with
	// the outputs it grants them: who consumes what.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Consumers []GrantConsumerStatus `json:"consumers,omitempty"`

	// consumerCount is how many RemoteStates read through the grant;
	// consumers lists the first 256.
	// +optional
	ConsumerCount int32 `json:"consumerCount,omitempty"`
}

// OutputGrantKind is the kind of an OutputGrant, as an object's TypeMeta
// and an owner reference spell it.
const OutputGrantKind = "OutputGrant"

// OutputGrant lets the RemoteStates of other namespaces read outputs of
// the backends of its namespace: outputs only, the ones it names, to the
// namespaces it names. The producer's credentials and passphrases never
// leave the operator.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ogrant,categories=infrastate
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Consumers",type=integer,JSONPath=`.status.consumerCount`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OutputGrant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says what is granted to whom.
	// +required
	Spec OutputGrantSpec `json:"spec"`

	// status is the observed state.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status OutputGrantStatus `json:"status,omitempty"`
}

// OutputGrantList is a list of OutputGrant.
//
// +kubebuilder:object:root=true
type OutputGrantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// items is the list of OutputGrant.
	Items []OutputGrant `json:"items"`
}

// StatusValue returns the status, for status patches.
func (in *OutputGrant) StatusValue() any { return &in.Status }

// StatusConditions returns the conditions, for condition helpers.
func (in *OutputGrant) StatusConditions() *[]metav1.Condition { return &in.Status.Conditions }

// StatusObservedGeneration returns the observed generation, for status helpers.
func (in *OutputGrant) StatusObservedGeneration() *int64 { return &in.Status.ObservedGeneration }

func init() {
	register(&OutputGrant{}, &OutputGrantList{})
}
