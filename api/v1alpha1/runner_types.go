package v1alpha1

// RunnerFlavor names the program that consumes a backend's rendered files.
// +kubebuilder:validation:Enum=terraform;opentofu
type RunnerFlavor string

const (
	// RunnerTerraform is HashiCorp Terraform.
	RunnerTerraform RunnerFlavor = "terraform"
	// RunnerOpenTofu is OpenTofu.
	RunnerOpenTofu RunnerFlavor = "opentofu"
)

// Runner says which program, and which version of it, runs with a
// backend's rendered files. When it is set, the operator refuses settings
// that runner cannot read, at admission where a rule can say so and
// otherwise with Stalled and reason UnsupportedByRunner, and renders the
// files as that runner reads them.
// +kubebuilder:validation:XValidation:rule="!has(self.version) || self.flavor != 'terraform' || !self.version.startsWith('0.')",message="runner.version: the operator knows Terraform 1.0 and later",fieldPath=".version"
// +kubebuilder:validation:XValidation:rule="!has(self.version) || self.flavor != 'opentofu' || !self.version.matches('^(0|1[.][0-5])[.]')",message="runner.version: OpenTofu releases start at 1.6",fieldPath=".version"
type Runner struct {
	// flavor is terraform or opentofu.
	// +required
	Flavor RunnerFlavor `json:"flavor"`

	// version of the runner, MAJOR.MINOR or MAJOR.MINOR.PATCH (MAJOR.MINOR
	// is read as its first release, MAJOR.MINOR.0). Unset means a current
	// release of the flavor.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})(\.(0|[1-9][0-9]{0,3}))?$`
	Version string `json:"version,omitempty"`
}

// CompatibleRunner is one runner flavor, and the range of its versions,
// that reads the rendered files as the operator meant them.
type CompatibleRunner struct {
	// flavor is terraform or opentofu.
	Flavor RunnerFlavor `json:"flavor"`

	// versions is the range of versions, such as ">= 1.6.0" or
	// ">= 1.6.0, < 1.8.0".
	// +kubebuilder:validation:MaxLength=64
	Versions string `json:"versions"`
}
