package v1alpha1

// BackendCommonSpec holds the spec fields that every backend kind has with
// the same type, validation and documentation, and the rules that read
// only them. Each kind's spec embeds it inline, so that its fields are
// fields of spec itself in every CRD. The fields that every kind has but
// documents in its own terms (probe, forceUnlock, lockPolicy, overrides)
// stay in each kind's spec.
//
// +kubebuilder:validation:XValidation:rule="!has(self.encryption) || !has(self.runner) || self.runner.flavor != 'terraform'",message="encryption is OpenTofu's state encryption, which Terraform cannot read: set runner.flavor to opentofu, or remove encryption",fieldPath=".encryption"
// +kubebuilder:validation:XValidation:rule="!has(self.encryption) || !has(self.runner) || !has(self.runner.version) || !self.runner.version.matches('^1[.]6([.]|$)')",message="encryption is read by OpenTofu 1.7 and later: the runner in spec.runner cannot read it",fieldPath=".encryption"
type BackendCommonSpec struct {
	// runner says which program (terraform or opentofu) and version runs
	// with the rendered files. Settings it cannot read are refused, and
	// the files are rendered as it reads them. Unset renders what the spec
	// says; status.rendered.compatibleRunners tells who can use it.
	// +optional
	Runner *Runner `json:"runner,omitempty"`

	// encryption encrypts state and plans with OpenTofu's state
	// encryption (pbkdf2 and aes_gcm), rendered as TF_ENCRYPTION into the
	// credentials Secret. The probe and RemoteState decrypt with it. Not
	// for Terraform, which cannot read encrypted state.
	// +optional
	Encryption *StateEncryption `json:"encryption,omitempty"`

	// configMapName is the name of the rendered ConfigMap. Defaults to
	// "<name>-backend". Names that Kubernetes or cluster add-ons publish in
	// every namespace are refused.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="!(self in ['kube-root-ca.crt', 'openshift-service-ca.crt']) && !self.endsWith('-ca-root-cert')",message="configMapName must not be a name that Kubernetes or a cluster add-on publishes in every namespace (kube-root-ca.crt, openshift-service-ca.crt, *-ca-root-cert)"
	ConfigMapName string `json:"configMapName,omitempty"`
}
