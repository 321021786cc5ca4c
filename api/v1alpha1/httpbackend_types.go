package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HttpBackendSpec describes a Terraform "http" (REST) state backend.
//
// +kubebuilder:validation:XValidation:rule="!has(self.retryWaitMin) || !has(self.retryWaitMax) || self.retryWaitMin <= self.retryWaitMax",message="retryWaitMin must be less than or equal to retryWaitMax",fieldPath=".retryWaitMin"
// +kubebuilder:validation:XValidation:rule="!has(self.passwordSecretRef) || has(self.username)",message="passwordSecretRef needs username: Terraform sends basic auth only when a username is set",fieldPath=".passwordSecretRef"
// +kubebuilder:validation:XValidation:rule="!has(self.probe) || !has(self.probe.lockCheck) || !self.probe.lockCheck || (has(self.lockAddress) && has(self.unlockAddress))",message="probe.lockCheck needs lockAddress and unlockAddress",fieldPath=".probe.lockCheck"
// +kubebuilder:validation:XValidation:rule="!has(self.forceUnlock) || (has(self.lockAddress) && has(self.unlockAddress))",message="forceUnlock needs lockAddress (to learn the holder) and unlockAddress",fieldPath=".forceUnlock"
// +kubebuilder:validation:XValidation:rule="!has(self.lockPolicy) || (has(self.probe) && has(self.probe.lockCheck) && self.probe.lockCheck)",message="lockPolicy needs probe.lockCheck: the http protocol shows the lock holder only to a lock attempt",fieldPath=".lockPolicy"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, !(o.path in ['password', 'client_certificate_pem', 'client_private_key_pem', 'client_ca_certificate_pem']))",message="overrides cannot set password, client_certificate_pem, client_private_key_pem or client_ca_certificate_pem: use passwordSecretRef and tls",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.path != 'address')",message="overrides cannot set address: set spec.address instead, which the probe and RemoteState read too",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.path != 'lock_address')",message="overrides cannot set lock_address: set spec.lockAddress instead, which the probe and RemoteState read too",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.path != 'lock_method')",message="overrides cannot set lock_method: set spec.lockMethod instead, which the probe and RemoteState read too",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.path != 'unlock_address')",message="overrides cannot set unlock_address: set spec.unlockAddress instead, which the probe and RemoteState read too",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.path != 'unlock_method')",message="overrides cannot set unlock_method: set spec.unlockMethod instead, which the probe and RemoteState read too",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.path != 'username')",message="overrides cannot set username: set spec.username instead, which the probe and RemoteState read too",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.path != 'skip_cert_verification')",message="overrides cannot set skip_cert_verification: set spec.skipCertVerification instead, which the probe and RemoteState read too",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.path != 'retry_max')",message="overrides cannot set retry_max: set spec.retryMax instead, which the probe and RemoteState read too",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.path != 'retry_wait_min')",message="overrides cannot set retry_wait_min: set spec.retryWaitMin instead, which the probe and RemoteState read too",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.path != 'retry_wait_max')",message="overrides cannot set retry_wait_max: set spec.retryWaitMax instead, which the probe and RemoteState read too",fieldPath=".overrides"
// +kubebuilder:validation:XValidation:rule="!has(self.runner) || !has(self.tls) || !has(self.tls.clientCertificateSecretRef) || self.runner.flavor != 'terraform' || !has(self.runner.version) || !self.runner.version.matches('^1[.][0-3]([.]|$)')",message="tls.clientCertificateSecretRef is read by Terraform 1.4 and later and by OpenTofu: the runner in spec.runner cannot read it",fieldPath=".tls.clientCertificateSecretRef"
// +kubebuilder:validation:XValidation:rule="!has(self.runner) || !has(self.tls) || !has(self.tls.caCertificate) || self.runner.flavor != 'terraform' || !has(self.runner.version) || !self.runner.version.matches('^1[.][0-3]([.]|$)')",message="tls.caCertificate is read by Terraform 1.4 and later and by OpenTofu: the runner in spec.runner cannot read it",fieldPath=".tls.caCertificate"
// +kubebuilder:validation:XValidation:rule="!has(self.lockAddress) || self.lockAddress != self.address || (has(self.lockMethod) ? self.lockMethod : 'LOCK') != (has(self.updateMethod) ? self.updateMethod : 'POST')",message="lockAddress equals address and lockMethod equals updateMethod (POST when unset): the server would take every lock request for a write of the state and replace the state with the lock's LockInfo; set another lockMethod (such as LOCK) or another lockAddress",fieldPath=".lockMethod"
// +kubebuilder:validation:XValidation:rule="!has(self.unlockAddress) || self.unlockAddress != self.address || (has(self.unlockMethod) ? self.unlockMethod : 'UNLOCK') != (has(self.updateMethod) ? self.updateMethod : 'POST')",message="unlockAddress equals address and unlockMethod equals updateMethod (POST when unset): the server would take every unlock request for a write of the state and replace the state with the lock's LockInfo; set another unlockMethod (such as UNLOCK) or another unlockAddress",fieldPath=".unlockMethod"
type HttpBackendSpec struct {
	// address of the state, the REST endpoint Terraform GETs and updates.
	// It is configuration, published in the rendered ConfigMap and shown by
	// kubectl get, so it never carries credentials: user information
	// (user:password@) and query parameters named like credentials (token,
	// password, signature, ...) are refused; use username and
	// passwordSecretRef. Link-local and cloud metadata addresses are
	// refused too, and the unspecified addresses 0.0.0.0 and [::] (and
	// [::ffff:0.0.0.0]), where a connection reaches the local host.
	// Messages and logs print only its scheme, host and path.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="(self.startsWith('http://') || self.startsWith('https://')) && isURL(self) && url(self).getHostname() != ''",message="address must be an absolute http:// or https:// URL with a host",reason="FieldValueForbidden"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://[^/?#]*@')",message="address must not contain user information (user:password@host): it would be published in the rendered ConfigMap; set username and passwordSecretRef instead",reason="FieldValueForbidden"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(?i)[?&](token|access_token|private_token|auth|auth_token|password|passwd|pwd|secret|client_secret|api_key|apikey|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential)([=&#]|$)')",message="address must not carry credentials in its query string (token, password, signature and the like): it is published in the rendered ConfigMap; set username and passwordSecretRef instead",reason="FieldValueForbidden"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://(169[.]254[.][0-9]+[.][0-9]+|100[.]100[.]100[.]200|[[](?i:fe[89ab][0-9a-f]:[^]]*|fd00:ec2::254|::ffff:169[.]254[.][0-9.]+|::ffff:a9fe:[0-9a-f:]+)[]]|(?i:metadata|metadata[.]google[.]internal|metadata[.]goog|instance-data|instance-data[.]ec2[.]internal|metadata[.]tencentyun[.]com)[.]?)(:[0-9]*)?([/?#]|$)')",message="address must not point at a link-local address or a cloud metadata service (169.254.0.0/16, fe80::/10, metadata.google.internal, ...)",reason="FieldValueForbidden"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://(0+[.]0+[.]0+[.]0+|[[]([0:]*(0+[.]0+[.]0+[.]0+)?|[0:]*:(?i:ffff):(0+:0+|0+[.]0+[.]0+[.]0+))(%[^]]*)?[]])(:[0-9]*)?([/?#]|$)')",message="address must not be an unspecified address (0.0.0.0, [::], [::ffff:0.0.0.0]): a connection to it reaches the local host",reason="FieldValueForbidden"
	Address string `json:"address"`

	// updateMethod is the HTTP method used to write the state.
	// +optional
	// +kubebuilder:default=POST
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Z][A-Z0-9_-]*$')",message="updateMethod must be an upper-case HTTP method token such as POST or PUT"
	UpdateMethod string `json:"updateMethod,omitempty"`

	// lockAddress is the URL of the lock endpoint. Unset disables locking.
	// The rules of address apply.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="(self.startsWith('http://') || self.startsWith('https://')) && isURL(self) && url(self).getHostname() != ''",message="lockAddress must be an absolute http:// or https:// URL with a host",reason="FieldValueForbidden"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://[^/?#]*@')",message="lockAddress must not contain user information (user:password@host): it would be published in the rendered ConfigMap; set username and passwordSecretRef instead",reason="FieldValueForbidden"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(?i)[?&](token|access_token|private_token|auth|auth_token|password|passwd|pwd|secret|client_secret|api_key|apikey|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential)([=&#]|$)')",message="lockAddress must not carry credentials in its query string (token, password, signature and the like): it is published in the rendered ConfigMap; set username and passwordSecretRef instead",reason="FieldValueForbidden"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://(169[.]254[.][0-9]+[.][0-9]+|100[.]100[.]100[.]200|[[](?i:fe[89ab][0-9a-f]:[^]]*|fd00:ec2::254|::ffff:169[.]254[.][0-9.]+|::ffff:a9fe:[0-9a-f:]+)[]]|(?i:metadata|metadata[.]google[.]internal|metadata[.]goog|instance-data|instance-data[.]ec2[.]internal|metadata[.]tencentyun[.]com)[.]?)(:[0-9]*)?([/?#]|$)')",message="lockAddress must not point at a link-local address or a cloud metadata service (169.254.0.0/16, fe80::/10, metadata.google.internal, ...)",reason="FieldValueForbidden"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://(0+[.]0+[.]0+[.]0+|[[]([0:]*(0+[.]0+[.]0+[.]0+)?|[0:]*:(?i:ffff):(0+:0+|0+[.]0+[.]0+[.]0+))(%[^]]*)?[]])(:[0-9]*)?([/?#]|$)')",message="lockAddress must not be an unspecified address (0.0.0.0, [::], [::ffff:0.0.0.0]): a connection to it reaches the local host",reason="FieldValueForbidden"
	LockAddress string `json:"lockAddress,omitempty"`

	// lockMethod is the HTTP method used to take the lock: LOCK, UNLOCK,
	// POST, PUT, DELETE or PATCH. When lockAddress equals address it must
	// differ from updateMethod: a lock request would be a write of the
	// state, replacing it with the lock's LockInfo.
	// +optional
	// +kubebuilder:default=LOCK
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self in ['LOCK', 'UNLOCK', 'POST', 'PUT', 'DELETE', 'PATCH']",message="lockMethod must be one of LOCK, UNLOCK, POST, PUT, DELETE or PATCH, the methods state servers use"
	LockMethod string `json:"lockMethod,omitempty"`

	// unlockAddress is the URL of the unlock endpoint. Unset makes unlock a
	// no-op in Terraform. forceUnlock needs both lockAddress and
	// unlockAddress. The rules of address apply.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="(self.startsWith('http://') || self.startsWith('https://')) && isURL(self) && url(self).getHostname() != ''",message="unlockAddress must be an absolute http:// or https:// URL with a host",reason="FieldValueForbidden"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://[^/?#]*@')",message="unlockAddress must not contain user information (user:password@host): it would be published in the rendered ConfigMap; set username and passwordSecretRef instead",reason="FieldValueForbidden"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(?i)[?&](token|access_token|private_token|auth|auth_token|password|passwd|pwd|secret|client_secret|api_key|apikey|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential)([=&#]|$)')",message="unlockAddress must not carry credentials in its query string (token, password, signature and the like): it is published in the rendered ConfigMap; set username and passwordSecretRef instead",reason="FieldValueForbidden"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://(169[.]254[.][0-9]+[.][0-9]+|100[.]100[.]100[.]200|[[](?i:fe[89ab][0-9a-f]:[^]]*|fd00:ec2::254|::ffff:169[.]254[.][0-9.]+|::ffff:a9fe:[0-9a-f:]+)[]]|(?i:metadata|metadata[.]google[.]internal|metadata[.]goog|instance-data|instance-data[.]ec2[.]internal|metadata[.]tencentyun[.]com)[.]?)(:[0-9]*)?([/?#]|$)')",message="unlockAddress must not point at a link-local address or a cloud metadata service (169.254.0.0/16, fe80::/10, metadata.google.internal, ...)",reason="FieldValueForbidden"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://(0+[.]0+[.]0+[.]0+|[[]([0:]*(0+[.]0+[.]0+[.]0+)?|[0:]*:(?i:ffff):(0+:0+|0+[.]0+[.]0+[.]0+))(%[^]]*)?[]])(:[0-9]*)?([/?#]|$)')",message="unlockAddress must not be an unspecified address (0.0.0.0, [::], [::ffff:0.0.0.0]): a connection to it reaches the local host",reason="FieldValueForbidden"
	UnlockAddress string `json:"unlockAddress,omitempty"`

	// unlockMethod is the HTTP method used to release the lock: LOCK,
	// UNLOCK, POST, PUT, DELETE or PATCH. When unlockAddress equals address
	// it must differ from updateMethod, as lockMethod does.
	// +optional
	// +kubebuilder:default=UNLOCK
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self in ['LOCK', 'UNLOCK', 'POST', 'PUT', 'DELETE', 'PATCH']",message="unlockMethod must be one of LOCK, UNLOCK, POST, PUT, DELETE or PATCH, the methods state servers use"
	UnlockMethod string `json:"unlockMethod,omitempty"`

	// username for HTTP basic auth. It is not secret and is rendered into
	// the backend configuration.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Username string `json:"username,omitempty"`

	// passwordSecretRef selects the basic auth password; key defaults to
	// "password". It is rendered only into the credentials Secret, as
	// TF_HTTP_PASSWORD.
	// +optional
	PasswordSecretRef *SecretKeyRef `json:"passwordSecretRef,omitempty"`

	// retryMax is the number of retries of a failed request.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=20
	RetryMax *int32 `json:"retryMax,omitempty"`

	// retryWaitMin is the minimum wait between retries, in seconds.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	RetryWaitMin *int32 `json:"retryWaitMin,omitempty"`

	// retryWaitMax is the maximum wait between retries, in seconds.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	RetryWaitMax *int32 `json:"retryWaitMax,omitempty"`

	// skipCertVerification disables verification of the server's TLS
	// certificate. Use only for testing.
	// +optional
	SkipCertVerification bool `json:"skipCertVerification,omitempty"`

	// tls configures the client certificate and the CA bundle.
	// +optional
	TLS *HttpBackendTLS `json:"tls,omitempty"`

	// probe controls how often the controller reads the state.
	// +optional
	Probe *HttpProbeSpec `json:"probe,omitempty"`

	// forceUnlock releases a stuck lock, GitOps-safe: the controller acts
	// only while the current holder has exactly this ID, so leaving it in a
	// manifest is harmless.
	// +optional
	ForceUnlock *ForceUnlockSpec `json:"forceUnlock,omitempty"`

	// lockPolicy reports locks held too long and releases locks whose
	// runner pod is gone. It needs probe.lockCheck: the http protocol
	// shows the holder only to a lock attempt.
	// +optional
	LockPolicy *LockPolicy `json:"lockPolicy,omitempty"`

	// The fields every backend kind shares: runner, encryption and
	// configMapName.
	BackendCommonSpec `json:",inline"`

	// overrides set attributes of the rendered backend block that no typed
	// field covers. Credential attributes are rejected, and so are the
	// attributes the probe and RemoteState read from typed fields
	// (address, lock_address, lock_method, unlock_address, unlock_method,
	// username, skip_cert_verification, retry_max, retry_wait_min,
	// retry_wait_max): status would describe another backend than the one
	// runners use.
	// +optional
	// +listType=map
	// +listMapKey=path
	// +kubebuilder:validation:MaxItems=32
	Overrides []Override `json:"overrides,omitempty"`
}

// HttpBackendTLS configures mutual TLS and the trusted CA of an HttpBackend.
type HttpBackendTLS struct {
	// clientCertificateSecretRef names a kubernetes.io/tls Secret whose
	// tls.crt and tls.key are the client certificate and private key
	// (client_certificate_pem and client_private_key_pem). Both keys are
	// required and must form a pair.
	// +optional
	ClientCertificateSecretRef *LocalSecretRef `json:"clientCertificateSecretRef,omitempty"`

	// caCertificate is the CA bundle (client_ca_certificate_pem). It
	// replaces the system roots, as in Terraform.
	// +optional
	CACertificate *CACertificateSource `json:"caCertificate,omitempty"`
}

// CACertificateSource selects a PEM CA bundle from a Secret or a ConfigMap.
//
// +kubebuilder:validation:XValidation:rule="has(self.secretRef) != has(self.configMapRef)",message="caCertificate must set exactly one of secretRef or configMapRef"
type CACertificateSource struct {
	// secretRef names a Secret holding the bundle.
	// +optional
	SecretRef *LocalSecretRef `json:"secretRef,omitempty"`

	// configMapRef names a ConfigMap holding the bundle.
	// +optional
	ConfigMapRef *LocalConfigMapRef `json:"configMapRef,omitempty"`

	// key holding the PEM bundle.
	// +optional
	// +kubebuilder:default="ca.crt"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// HttpProbeSpec controls the probes of an HttpBackend.
type HttpProbeSpec struct {
	ProbeSpec `json:",inline"`

	// lockCheck opts in to learning the lock holder: the protocol has no
	// call to read a lock, so the probe takes the lock and releases it at
	// once. A conflict reveals the holder.
	// +optional
	LockCheck bool `json:"lockCheck,omitempty"`
}

// ForceUnlockSpec names the lock to release.
type ForceUnlockSpec struct {
	// lockID of the holder to release, as shown in status.lock.id.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	LockID string `json:"lockID"`
}

// HttpBackendStatus is the observed state of an HttpBackend: the status
// every backend kind shares. Its probe condition is StateReachable, and
// status.state summarises the state held at address.
type HttpBackendStatus struct {
	BackendStatus `json:",inline"`

	// server is what the state server was seen to do with the operator's
	// own lock (docs/servers.md): learned when a lock feature first needs
	// it (probe.lockCheck, forceUnlock, a StateLock) on a state no one
	// else has locked, and again when the addresses, the lock methods or
	// the credentials change. Every lock feature decides from it what it
	// may do on this server.
	// +optional
	Server *ServerBehaviour `json:"server,omitempty"`
}

// ServerBehaviour is what a REST state server was seen to do with the lock
// protocol, by a check that took and released only locks of its own.
type ServerBehaviour struct {
	// locksExclusive is true when the server refused a second LOCK while
	// the check held the lock. A server that grants both does not lock.
	LocksExclusive bool `json:"locksExclusive"`

	// conflictStatus is the status of that refusal (409 or 423).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=599
	ConflictStatus int32 `json:"conflictStatus,omitempty"`

	// holderInConflicts is true when that refusal named the holder (its
	// LockInfo, with the holder's ID); false when it named no holder.
	HolderInConflicts bool `json:"holderInConflicts"`

	// conflictFields says, for each LockInfo key of that refusal, whose
	// value it carried: holder (the holder's own), server (a value of
	// the server's, as GitLab's user for Who) or requester (the refused
	// LOCK's own value echoed back, which says nothing of the holder).
	// +optional
	// +kubebuilder:validation:MaxProperties=7
	ConflictFields map[string]ConflictFieldSource `json:"conflictFields,omitempty"`

	// holderVerbatim is true when that refusal carried, byte for byte,
	// the LockInfo the holder locked with.
	HolderVerbatim bool `json:"holderVerbatim"`

	// reentrantLock is true when a LOCK again under the holder's own ID
	// answered 200.
	ReentrantLock bool `json:"reentrantLock"`

	// unlockChecksID is true when an UNLOCK naming another ID than the
	// holder's was refused.
	UnlockChecksID bool `json:"unlockChecksID"`

	// unlockIgnoresBody is true when such an UNLOCK released the lock: on
	// this server any UNLOCK releases any lock.
	UnlockIgnoresBody bool `json:"unlockIgnoresBody"`

	// unlockBodies are the UNLOCK bodies that released the check's own
	// lock: exact (the LockInfo it locked with), id (a LockInfo naming
	// only the ID), empty.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=3
	UnlockBodies []UnlockBody `json:"unlockBodies,omitempty"`

	// unlockStatuses is the status each body was answered with.
	// +optional
	// +kubebuilder:validation:MaxProperties=3
	UnlockStatuses map[UnlockBody]int32 `json:"unlockStatuses,omitempty"`

	// lockCreatesState is true when a LOCK created a state that did not
	// exist (as GitLab's does), false when it did not; unset when the
	// state existed when the check ran.
	// +optional
	LockCreatesState *bool `json:"lockCreatesState,omitempty"`

	// checkedAt is when the check ran.
	CheckedAt metav1.Time `json:"checkedAt"`

	// checkedWith fingerprints the addresses, lock methods and
	// credentials the check ran with: a change makes the check run again.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	CheckedWith string `json:"checkedWith,omitempty"`
}

// UnlockBody is a form of UNLOCK body.
// +kubebuilder:validation:Enum=exact;id;empty
type UnlockBody string

// ConflictFieldSource says whose value a field of a conflict answer
// carried.
// +kubebuilder:validation:Enum=holder;server;requester
type ConflictFieldSource string

// HttpBackendKind is the kind of an HttpBackend, as an object's TypeMeta,
// an owner reference and a backendRef spell it.
const HttpBackendKind = "HttpBackend"

// HttpBackend is a Terraform REST ("http") state backend. The controller
// renders its configuration into a ConfigMap and its credentials into a
// Secret for runner pods, and probes the state it holds.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=hb;httpbe,categories=infrastate
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.address`
// +kubebuilder:printcolumn:name="Serial",type=integer,JSONPath=`.status.state.serial`,priority=1
// +kubebuilder:printcolumn:name="Locked",type=string,JSONPath=`.status.locked`
// +kubebuilder:printcolumn:name="Lock ID",type=string,JSONPath=`.status.lock.id`,priority=1
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 233",message="metadata.name must be at most 233 characters, so that <name>-backend-credentials is a valid Secret name"
type HttpBackend struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec describes the backend.
	// +required
	Spec HttpBackendSpec `json:"spec"`

	// status is the observed state of the backend.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status HttpBackendStatus `json:"status,omitempty"`
}

// HttpBackendList is a list of HttpBackend.
//
// +kubebuilder:object:root=true
type HttpBackendList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// items is the list of HttpBackend.
	Items []HttpBackend `json:"items"`
}

// SharedStatus returns the status every backend kind shares.
func (in *HttpBackend) SharedStatus() *BackendStatus { return &in.Status.BackendStatus }

// StatusValue returns the status, for status patches.
func (in *HttpBackend) StatusValue() any { return &in.Status }

// StatusConditions returns the conditions, for condition helpers.
func (in *HttpBackend) StatusConditions() *[]metav1.Condition { return &in.Status.Conditions }

// StatusObservedGeneration returns the observed generation, for status helpers.
func (in *HttpBackend) StatusObservedGeneration() *int64 { return &in.Status.ObservedGeneration }

func init() {
	register(&HttpBackend{}, &HttpBackendList{})
}
