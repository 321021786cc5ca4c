package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RemoteStateSpec describes which stack's outputs to publish and where.
//
// +kubebuilder:validation:XValidation:rule="self.backendRef.kind != 'HttpBackend' || !has(self.workspace) || self.workspace == 'default'",message="workspace must be default for an HttpBackend: the http backend has no workspaces",fieldPath=".workspace"
type RemoteStateSpec struct {
	// backendRef names the HttpBackend or CosBackend whose state holds
	// the outputs: in the same namespace, or in another one whose
	// OutputGrant grants it to this namespace (see namespace).
	// +required
	BackendRef RemoteBackendReference `json:"backendRef"`

	// workspace to read. The http backend only has "default".
	// +optional
	// +kubebuilder:default=default
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=90
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-._a-zA-Z0-9]+$')",message="workspace may contain only letters, digits, '-', '_' and '.'"
	// +kubebuilder:validation:XValidation:rule="self != '.' && self != '..'",message="workspace must not be '.' or '..': they would reach objects outside the backend's prefix"
	Workspace string `json:"workspace,omitempty"`

	// defaults fill outputs the state lacks; the state's own values win. A
	// missing state is still an error, as in terraform_remote_state. Keys
	// are output names, published as ConfigMap keys.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Defaults map[string]apiextensionsv1.JSON `json:"defaults,omitempty"`

	// outputs selects, type-checks and renames outputs. All outputs are
	// published when it is empty.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:XValidation:rule="self.all(o, self.filter(p, (has(p.key) ? p.key : p.name) == (has(o.key) ? o.key : o.name)).size() == 1)",message="outputs must publish distinct keys: two outputs would write the same key"
	Outputs []OutputSelector `json:"outputs,omitempty"`

	// probe controls how often the state is read: probe.interval is the
	// time between two reads.
	// +optional
	Probe *ProbeSpec `json:"probe,omitempty"`

	// interval between two reads of the state, jittered by up to 10%. It is
	// honoured only while probe.interval is unset: probe.interval wins, so
	// that a RemoteState holding the 5m earlier CRDs filled in here moves
	// to probe.interval by setting it alone.
	//
	// Deprecated: use probe.interval, which also accepts "0s". interval
	// will be removed in the next API version.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('24h')",message="interval must be between 10s and 24h"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// target names the ConfigMap (plain outputs) and the Secret (sensitive
	// outputs). Both default to "<name>-outputs".
	// +optional
	Target RemoteStateTarget `json:"target,omitempty"`
}

// BackendReference names a backend in the same namespace.
type BackendReference struct {
	// kind of the backend.
	// +required
	// +kubebuilder:validation:Enum=HttpBackend;CosBackend
	Kind string `json:"kind"`

	// name of the backend.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// RemoteBackendReference names the backend a RemoteState reads, in its
// namespace or another.
type RemoteBackendReference struct {
	BackendReference `json:",inline"`

	// namespace of the backend; empty is the RemoteState's own. A backend
	// of another namespace is read only where an OutputGrant of that
	// namespace grants it to this one, and only the outputs it grants are
	// published; without one the RemoteState stalls with reason
	// ReferenceNotGranted, whether or not the backend exists.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`
}

// OutputSelector selects one output, checks its type and names its key.
type OutputSelector struct {
	// name of the output in the state.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-zA-Z_][-a-zA-Z0-9_]*$`
	Name string `json:"name"`

	// type the output must have, as the typed readers of the
	// terraform_remote_state data source check it: any, string, number,
	// bool, list (lists, sets and tuples), map (maps and objects) or object.
	// +optional
	// +kubebuilder:default=any
	// +kubebuilder:validation:Enum=any;string;number;bool;list;map;object
	Type string `json:"type,omitempty"`

	// key of the ConfigMap or Secret entry; defaults to name.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +kubebuilder:validation:XValidation:rule="self != '.' && self != '..'",message="key must not be '.' or '..', which a ConfigMap or Secret cannot hold"
	Key string `json:"key,omitempty"`
}

// RemoteStateTarget names the objects the outputs are published to.
type RemoteStateTarget struct {
	// configMapName receives the non-sensitive outputs. Names that
	// Kubernetes or cluster add-ons publish in every namespace are refused.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="!(self in ['kube-root-ca.crt', 'openshift-service-ca.crt']) && !self.endsWith('-ca-root-cert')",message="configMapName must not be a name that Kubernetes or a cluster add-on publishes in every namespace (kube-root-ca.crt, openshift-service-ca.crt, *-ca-root-cert)"
	ConfigMapName string `json:"configMapName,omitempty"`

	// secretName receives the sensitive outputs, and only those. Helm
	// release Secret names (sh.helm.release.v1.*) are refused.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('sh.helm.release.v1.')",message="secretName must not be a Helm release Secret name (sh.helm.release.v1.*)"
	SecretName string `json:"secretName,omitempty"`
}

// OutputStatus describes one published output, never its value.
type OutputStatus struct {
	// name of the output in the state.
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`

	// key it is published under.
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`

	// type of the output as Terraform records it, for example "string" or
	// ["list","string"]; "default" when it came from spec.defaults.
	// +kubebuilder:validation:MaxLength=1024
	Type string `json:"type"`

	// sensitive outputs are published only to the Secret.
	// +optional
	Sensitive bool `json:"sensitive,omitempty"`
}

// RemoteStateStatus is the observed state of a RemoteState.
type RemoteStateStatus struct {
	// conditions: Ready, Reconciling, Stalled and OutputsReady.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes; -1 until
	// the controller has processed the object.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// state is the serial and lineage of the state last read.
	// +optional
	State *StateSummary `json:"state,omitempty"`

	// outputs lists the published outputs: names, types, sensitivity.
	// +optional
	// +kubebuilder:validation:MaxItems=512
	Outputs []OutputStatus `json:"outputs,omitempty"`

	// rendered names the ConfigMap and Secret the outputs went to.
	// +optional
	Rendered *RenderedObjects `json:"rendered,omitempty"`
}

// RemoteStateKind is the kind of a RemoteState, as an object's TypeMeta and
// an owner reference spell it.
const RemoteStateKind = "RemoteState"

// RemoteState publishes the outputs of another stack's state: plain
// outputs to a ConfigMap, sensitive outputs to a Secret, for runner pods
// and applications.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rstate,categories=infrastate
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 245 || (has(self.spec.target) && has(self.spec.target.configMapName) && has(self.spec.target.secretName))",message="metadata.name must be at most 245 characters, so that <name>-outputs is a valid name, unless spec.target names both the ConfigMap and the Secret"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backendRef.name`
// +kubebuilder:printcolumn:name="From",type=string,JSONPath=`.spec.backendRef.namespace`,priority=1
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.backendRef.kind`,priority=1
// +kubebuilder:printcolumn:name="Workspace",type=string,JSONPath=`.spec.workspace`,priority=1
// +kubebuilder:printcolumn:name="Serial",type=integer,JSONPath=`.status.state.serial`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RemoteState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec describes the outputs to publish.
	// +required
	Spec RemoteStateSpec `json:"spec"`

	// status is the observed state.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status RemoteStateStatus `json:"status,omitempty"`
}

// RemoteStateList is a list of RemoteState.
//
// +kubebuilder:object:root=true
type RemoteStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// items is the list of RemoteState.
	Items []RemoteState `json:"items"`
}

// StatusValue returns the status, for status patches.
func (in *RemoteState) StatusValue() any { return &in.Status }

// StatusConditions returns the conditions, for condition helpers.
func (in *RemoteState) StatusConditions() *[]metav1.Condition { return &in.Status.Conditions }

// StatusObservedGeneration returns the observed generation, for status helpers.
func (in *RemoteState) StatusObservedGeneration() *int64 { return &in.Status.ObservedGeneration }

func init() {
	register(&RemoteState{}, &RemoteStateList{})
}
