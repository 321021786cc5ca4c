package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CosBackendSpec describes a Tencent Cloud Object Storage ("cos") state
// backend.
//
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, !(o.path in ['secret_id', 'secret_key', 'security_token']))",message="overrides cannot set secret_id, secret_key or security_token: use credentialsSecretRef",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.path != 'bucket')",message="overrides cannot set bucket: set spec.bucket instead, which the probe and RemoteState read too",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.path != 'region')",message="overrides cannot set region: set spec.region instead, which the probe and RemoteState read too",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.path != 'prefix')",message="overrides cannot set prefix: set spec.prefix instead, which the probe and RemoteState read too",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.path != 'key')",message="overrides cannot set key: set spec.key instead, which the probe and RemoteState read too",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.path != 'accelerate')",message="overrides cannot set accelerate: set spec.accelerate instead, which the probe and RemoteState read too",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.path != 'endpoint')",message="overrides cannot set endpoint: set spec.endpoint instead, which the probe and RemoteState read too",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.accelerate) || !self.accelerate || !has(self.endpoint)",message="accelerate and endpoint cannot be used together: choose the global acceleration domain or a private endpoint",fieldPath=".endpoint"
// +kubebuilder:validation:XValidation:rule="!has(self.endpoint) || !self.endpoint.startsWith('http://') || (has(self.allowInsecureEndpoint) && self.allowInsecureEndpoint)",message="endpoint uses http://, which sends the security token and the state in clear text: use https:// or set allowInsecureEndpoint",fieldPath=".endpoint"
// +kubebuilder:validation:XValidation:rule="!has(self.runner) || !has(self.endpoint) || (self.runner.flavor == 'terraform' && (!has(self.runner.version) || !self.runner.version.matches('^1[.][0-5]([.]|$)')))",message="endpoint is read only by Terraform 1.6 and later: the runner in spec.runner cannot read it",fieldPath=".endpoint"
// +kubebuilder:validation:XValidation:rule="!has(self.runner) || !has(self.domain) || (self.runner.flavor == 'terraform' && (!has(self.runner.version) || !self.runner.version.matches('^1[.][0-5]([.]|$)')))",message="domain is read only by Terraform 1.6 and later: the runner in spec.runner cannot read it",fieldPath=".domain"
// +kubebuilder:validation:XValidation:rule="!has(self.runner) || !has(self.assumeRole) || !has(self.assumeRole.externalId) || (self.runner.flavor == 'terraform' && (!has(self.runner.version) || !self.runner.version.matches('^1[.][0-9]([.]|$)')))",message="assumeRole.externalId is read only by Terraform 1.10 and later: the runner in spec.runner cannot read it",fieldPath=".assumeRole.externalId"
// +kubebuilder:validation:XValidation:rule="!has(self.runner) || !has(self.accelerate) || self.runner.flavor != 'terraform' || !has(self.runner.version) || !self.runner.version.matches('^1[.][0-2]([.]|$)')",message="accelerate is read by Terraform 1.3 and later and by OpenTofu: the runner in spec.runner cannot read it",fieldPath=".accelerate"
// +kubebuilder:validation:XValidation:rule="!has(self.runner) || !has(self.assumeRole) || self.runner.flavor != 'terraform' || !has(self.runner.version) || !self.runner.version.matches('^1[.][0-3]([.]|$)')",message="assumeRole is read by Terraform 1.4 and later and by OpenTofu: the runner in spec.runner cannot read it",fieldPath=".assumeRole"
type CosBackendSpec struct {
	// bucket holding the state, "<name>-<appid>". It must already exist.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=60
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([a-z0-9-]*[a-z0-9])?-[0-9]+$')",message="bucket must be <name>-<appid> of lower-case letters, digits and hyphens, for example tfstate-1250000000"
	Bucket string `json:"bucket"`

	// region of the bucket, for example ap-guangzhou. Defaults to the
	// manager's --cos-default-region (or TENCENTCLOUD_REGION); the backend
	// is Stalled when neither is set, as Terraform requires a region.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]+(-[a-z0-9]+)+$')",message="region must be a COS region such as ap-guangzhou"
	Region string `json:"region,omitempty"`

	// prefix is the directory of the state in the bucket. Unset places the
	// state at the bucket root. '..' segments are refused.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.startsWith('./')",message="prefix must not start with '/' or './'"
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(s, s == '..')",message="prefix must not contain '..' path segments: they would reach objects outside the prefix"
	Prefix string `json:"prefix,omitempty"`

	// key is the name of the state object. Terraform defaults it to
	// terraform.tfstate. '..' segments are refused.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.endsWith('/')",message="key must not start or end with '/'"
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(s, s == '..')",message="key must not contain '..' path segments: they would reach objects outside the prefix"
	Key string `json:"key,omitempty"`

	// encrypt enables AES256 server-side encryption of the state.
	// +optional
	Encrypt *bool `json:"encrypt,omitempty"`

	// acl of the state object. Unset means private.
	// +optional
	// +kubebuilder:validation:Enum=private;public-read
	ACL string `json:"acl,omitempty"`

	// accelerate uses the global acceleration domain.
	// +optional
	Accelerate *bool `json:"accelerate,omitempty"`

	// endpoint is a private network endpoint,
	// https://cos-internal.<region>.tencentcos.cn. Defaults to the public
	// endpoint of the region. An http:// endpoint sends the security token
	// and the state in clear text, so it needs allowInsecureEndpoint.
	// Terraform 1.5 and OpenTofu (checked with 1.12) do not know the
	// rendered endpoint attribute: their init refuses it.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://cos-internal\\\\.[a-z0-9-]+\\\\.tencentcos\\\\.cn$')",message="endpoint must look like https://cos-internal.<region>.tencentcos.cn",reason="FieldValueForbidden"
	Endpoint string `json:"endpoint,omitempty"`

	// allowInsecureEndpoint accepts an http:// endpoint. The operator and
	// Terraform then send the credentials' security token and the state in
	// clear text over the private network.
	// +optional
	AllowInsecureEndpoint bool `json:"allowInsecureEndpoint,omitempty"`

	// domain is the root domain of the Tencent Cloud APIs that Terraform
	// calls (STS for assumeRole), tencentcloudapi.com by default.
	// Terraform 1.5 and OpenTofu (checked with 1.12) do not know the
	// rendered domain attribute: their init refuses it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$')",message="domain must be a DNS domain name such as tencentcloudapi.com",reason="FieldValueForbidden"
	Domain string `json:"domain,omitempty"`

	// credentialsSecretRef names a Secret with the keys secretId and
	// secretKey, and optionally securityToken. They are rendered only into
	// the credentials Secret, as TENCENTCLOUD_SECRET_ID,
	// TENCENTCLOUD_SECRET_KEY and TENCENTCLOUD_SECURITY_TOKEN.
	// +optional
	CredentialsSecretRef *LocalSecretRef `json:"credentialsSecretRef,omitempty"`

	// assumeRole makes Terraform assume a CAM role before using the bucket.
	// The operator does not assume it (it makes no STS call): the bucket
	// check and RemoteState use the keys of credentialsSecretRef as they
	// are, and a CosBackend whose only credentials are an assumed role is
	// reported Unknown with reason AssumeRoleNotSupported.
	// +optional
	AssumeRole *AssumeRole `json:"assumeRole,omitempty"`

	// probe controls how often the controller checks the bucket and state.
	// +optional
	Probe *ProbeSpec `json:"probe,omitempty"`

	// forceUnlock releases a stuck lock of the default workspace,
	// GitOps-safe: the controller deletes the .tflock object only while
	// its ID (the lock object's MD5, as Terraform reports it and
	// status.lock.id shows it) is exactly this one, so leaving it in a
	// manifest is harmless. It acts at each probe, so it needs probing
	// enabled.
	// +optional
	ForceUnlock *ForceUnlockSpec `json:"forceUnlock,omitempty"`

	// lockPolicy reports locks held too long and releases locks whose
	// runner pod is gone.
	// +optional
	LockPolicy *LockPolicy `json:"lockPolicy,omitempty"`

	// The fields every backend kind shares: runner, encryption and
	// configMapName.
	BackendCommonSpec `json:",inline"`

	// overrides set attributes of the rendered backend block that no typed
	// field covers. Credential attributes are rejected, and so are the
	// attributes the probe and RemoteState read from typed fields (bucket,
	// region, prefix, key, accelerate, endpoint): status would describe
	// another backend than the one runners use. An object at assume_role
	// sets attributes of that block.
	// +optional
	// +listType=map
	// +listMapKey=path
	// +kubebuilder:validation:MaxItems=32
	Overrides []Override `json:"overrides,omitempty"`
}

// AssumeRole is the CAM role Terraform assumes for the COS backend.
type AssumeRole struct {
	// roleArn of the role to assume, for example
	// qcs::cam::uin/100000000001:roleName/tfstate.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	RoleArn string `json:"roleArn"`

	// sessionName identifies the session in audit logs.
	// +required
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-a-zA-Z0-9_+=,.@]+$')",message="sessionName may contain only letters, digits and the characters _+=,.@-"
	SessionName string `json:"sessionName"`

	// sessionDuration of the assumed role's credentials, in seconds.
	// +optional
	// +kubebuilder:default=7200
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=43200
	SessionDuration *int32 `json:"sessionDuration,omitempty"`

	// policy further restricts the assumed role, as a CAM policy document.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Policy string `json:"policy,omitempty"`

	// externalId the role's trust policy requires, if any. Terraform 1.5
	// and OpenTofu (checked with 1.12) do not know the rendered
	// assume_role.external_id attribute: their init refuses it.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	ExternalID string `json:"externalId,omitempty"`
}

// CosBackendStatus is the observed state of a CosBackend: the status every
// backend kind shares, and the region in effect. Its probe condition is
// BucketReady; status.state summarises the state object of the default
// workspace, and status.lock its .tflock object.
type CosBackendStatus struct {
	BackendStatus `json:",inline"`

	// region in effect: spec.region or the manager's default.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Region string `json:"region,omitempty"`
}

// CosBackendKind is the kind of a CosBackend, as an object's TypeMeta, an
// owner reference and a backendRef spell it.
const CosBackendKind = "CosBackend"

// CosBackend is a Tencent Cloud Object Storage state backend. The
// controller renders its configuration into a ConfigMap and its
// credentials into a Secret for runner pods, and checks the bucket, the
// state object and its lock.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cosb,categories=infrastate
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Bucket",type=string,JSONPath=`.spec.bucket`
// +kubebuilder:printcolumn:name="Region",type=string,JSONPath=`.status.region`
// +kubebuilder:printcolumn:name="Serial",type=integer,JSONPath=`.status.state.serial`,priority=1
// +kubebuilder:printcolumn:name="Locked",type=string,JSONPath=`.status.locked`
// +kubebuilder:printcolumn:name="Lock ID",type=string,JSONPath=`.status.lock.id`,priority=1
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 233",message="metadata.name must be at most 233 characters, so that <name>-backend-credentials is a valid Secret name"
type CosBackend struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec describes the backend.
	// +required
	Spec CosBackendSpec `json:"spec"`

	// status is the observed state of the backend.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status CosBackendStatus `json:"status,omitempty"`
}

// CosBackendList is a list of CosBackend.
//
// +kubebuilder:object:root=true
type CosBackendList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// items is the list of CosBackend.
	Items []CosBackend `json:"items"`
}

// SharedStatus returns the status every backend kind shares.
func (in *CosBackend) SharedStatus() *BackendStatus { return &in.Status.BackendStatus }

// StatusValue returns the status, for status patches.
func (in *CosBackend) StatusValue() any { return &in.Status }

// StatusConditions returns the conditions, for condition helpers.
func (in *CosBackend) StatusConditions() *[]metav1.Condition { return &in.Status.Conditions }

// StatusObservedGeneration returns the observed generation, for status helpers.
func (in *CosBackend) StatusObservedGeneration() *int64 { return &in.Status.ObservedGeneration }

func init() {
	register(&CosBackend{}, &CosBackendList{})
}
