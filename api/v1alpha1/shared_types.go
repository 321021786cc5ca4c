package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SecretKeyRef selects one key of a Secret in the object's own namespace.
// There are no cross-namespace references anywhere in this API.
type SecretKeyRef struct {
	// name of the Secret, in the same namespace as the referring object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// key within the Secret. Each field that uses a SecretKeyRef documents
	// the key it reads when this is empty.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// LocalSecretRef names a Secret in the object's own namespace.
type LocalSecretRef struct {
	// name of the Secret, in the same namespace as the referring object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// LocalConfigMapRef names a ConfigMap in the object's own namespace.
type LocalConfigMapRef struct {
	// name of the ConfigMap, in the same namespace as the referring object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// ProbeSpec controls how often the controller checks a backend, or reads
// the state of a RemoteState.
type ProbeSpec struct {
	// interval between two probes, jittered by up to 10%, counted from the
	// end of the last one. Unset takes the manager's
	// --default-probe-interval (5m unless set): the API server does not
	// fill it in. "0s" turns periodic probing off: a backend is then not
	// probed, and a RemoteState reads its state only when its spec, its
	// backend or their Secrets change (and once after a manager restart).
	// Otherwise it must be between 10s and 24h.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) == duration('0s') || (duration(self) >= duration('10s') && duration(self) <= duration('24h'))",message="probe.interval must be 0s (probing disabled) or between 10s and 24h"
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// Override sets one attribute of the rendered backend block that the typed
// fields do not cover. It is an escape hatch: typed fields are preferred.
type Override struct {
	// path of the attribute inside the backend block, in Terraform's
	// snake_case; nested blocks are separated by dots, for example
	// "assume_role.policy", at most three names deep. Credential attributes cannot be overridden:
	// they come only from Secret references.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*){0,2}$`
	Path string `json:"path"`

	// value of the attribute, as JSON: a string (at most 4096 bytes), a
	// number (0, or of a magnitude in [1e-32, 1e32)), a bool, null, or a
	// list or object of at most 64 such scalars (keys of at most 128
	// bytes). The values of all overrides of a backend total at most 32 KiB,
	// counting the bytes of strings and keys and 8 for other scalars. The
	// admission policy of config/admission enforces these bounds, and the
	// controller again before rendering.
	// +required
	// +kubebuilder:validation:XPreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Value apiextensionsv1.JSON `json:"value"`
}

// LockInfo describes the holder of a state lock, as Terraform writes it.
type LockInfo struct {
	// id of the lock, the value to give to forceUnlock.lockID.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	ID string `json:"id,omitempty"`

	// operation the holder is running, for example OperationTypeApply.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Operation string `json:"operation,omitempty"`

	// info is the free-form information the holder attached to the lock.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Info string `json:"info,omitempty"`

	// who holds the lock, usually user@host.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Who string `json:"who,omitempty"`

	// version of Terraform that took the lock.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version,omitempty"`

	// created is when the lock was taken.
	// +optional
	Created *metav1.Time `json:"created,omitempty"`

	// path of the state the lock protects, when the holder recorded it.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`
}

// StateSummary describes the state the backend holds, without its contents.
type StateSummary struct {
	// present is true when the backend holds a state for the default workspace.
	Present bool `json:"present"`

	// serial of the state, incremented by Terraform on every write.
	// +optional
	Serial int64 `json:"serial,omitempty"`

	// lineage of the state, a UUID fixed when the state was first created.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Lineage string `json:"lineage,omitempty"`

	// terraformVersion that last wrote the state.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TerraformVersion string `json:"terraformVersion,omitempty"`

	// sizeBytes is the size of the state document.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`

	// outputCount is the number of root module outputs in the state. An
	// encrypted state's outputs are counted only when spec.encryption
	// decrypts it.
	// +optional
	OutputCount int32 `json:"outputCount,omitempty"`

	// encrypted is true when the state is encrypted with OpenTofu's state
	// encryption. Its serial and lineage stay in clear text; its Terraform
	// version and outputs are known only when spec.encryption decrypts it.
	// +optional
	Encrypted bool `json:"encrypted,omitempty"`
}

// LockPolicy says how the controller treats a lock held too long, or held
// by a runner pod that is gone.
type LockPolicy struct {
	// staleAfter: a lock held longer than this (counted from the holder's
	// Created) is reported on the Locked condition with reason StaleLock,
	// with one Warning event. Unset reports no lock as stale. At least 1m.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="staleAfter must be at least 1m"
	StaleAfter *metav1.Duration `json:"staleAfter,omitempty"`

	// releaseWhenHolderGone releases a lock whose holder ran in a pod that
	// is gone: Terraform's LockInfo Who is user@hostname, and a runner
	// pod's hostname is its name. When the controller has seen that Pod in
	// the backend's namespace Running or Pending after the lock was taken
	// (the Pod created before the lock's Created, its containers not
	// finished before it), and the Pod then finished (Succeeded or Failed)
	// or was deleted, and stayed so for gracePeriod, the controller
	// releases that lock, and only that one, as forceUnlock.lockID does. A
	// holder whose hostname names no Pod the controller has seen so is
	// never touched. Off by default.
	// +optional
	ReleaseWhenHolderGone bool `json:"releaseWhenHolderGone,omitempty"`

	// gracePeriod is how long a holder's Pod must stay gone or finished
	// before its lock is released. Unset means 5m; between 30s and 24h.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s') && duration(self) <= duration('24h')",message="gracePeriod must be between 30s and 24h"
	GracePeriod *metav1.Duration `json:"gracePeriod,omitempty"`
}

// HolderPod is the Pod a lock's holder runs in, as the controller last
// saw it.
type HolderPod struct {
	// name of the Pod: the hostname in the holder's Who.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// uid of the Pod the controller saw Running or Pending after the lock
	// was taken.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	UID string `json:"uid,omitempty"`

	// phase of the Pod at the last probe; "Gone" once it was deleted.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Phase string `json:"phase,omitempty"`

	// goneSince is when the controller first saw the Pod finished or
	// deleted; the lock is released gracePeriod later.
	// +optional
	GoneSince *metav1.Time `json:"goneSince,omitempty"`
}

// ForceUnlockStatus records the last force unlock the controller performed.
type ForceUnlockStatus struct {
	// lockID that was released.
	// +kubebuilder:validation:MaxLength=256
	LockID string `json:"lockID"`

	// time the lock was released.
	Time metav1.Time `json:"time"`
}

// BackendStatus is the status every backend kind shares, inlined in each
// kind's status.
type BackendStatus struct {
	// conditions: Ready, Reconciling, Stalled, the condition the probe sets
	// (StateReachable for an HttpBackend, BucketReady for a CosBackend) and
	// Locked.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes; -1 until
	// the controller has processed the object.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// rendered names the ConfigMap and Secret for runner pods.
	// +optional
	Rendered *RenderedObjects `json:"rendered,omitempty"`

	// state summarises the state of the default workspace, from the last
	// probe.
	// +optional
	State *StateSummary `json:"state,omitempty"`

	// lock is the holder of the state lock, when the last probe that could
	// read the lock saw one. While Locked is Unknown (the lock cannot be
	// read) it is the last holder seen.
	// +optional
	Lock *LockInfo `json:"lock,omitempty"`

	// locked says in one word, for kubectl get, what the operator knows of
	// the lock: True, False or Unknown, as the Locked condition; Unchecked
	// when it does not read the lock (an HttpBackend without
	// probe.lockCheck, or probing turned off) and no StateLock of its own
	// holds it.
	// +optional
	// +kubebuilder:validation:Enum=True;False;Unknown;Unchecked
	Locked string `json:"locked,omitempty"`

	// holderPod is the Pod the lock's holder runs in, when its hostname
	// names a Pod of the namespace and lockPolicy.releaseWhenHolderGone is
	// set.
	// +optional
	HolderPod *HolderPod `json:"holderPod,omitempty"`

	// lastForceUnlock records the last lock the controller released.
	// +optional
	LastForceUnlock *ForceUnlockStatus `json:"lastForceUnlock,omitempty"`
}

// RenderedObjects names the objects the controller renders for runner pods.
type RenderedObjects struct {
	// configMapName is the ConfigMap holding backend.tf, backend.tf.json and
	// backend.tfbackend.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ConfigMapName string `json:"configMapName,omitempty"`

	// secretName is the Secret holding the credentials as environment
	// variables, for envFrom.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName,omitempty"`

	// compatibleRunners are the runners, and their versions, that read the
	// rendered files as the spec means them. Empty when none does.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4
	CompatibleRunners []CompatibleRunner `json:"compatibleRunners,omitempty"`
}
