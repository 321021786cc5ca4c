package render

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// Names of the rendered files, the keys of [Files.Data] and of the rendered
// ConfigMap.
const (
	// BackendTFKey is backend.tf: a terraform block with the backend block.
	BackendTFKey = "backend.tf"
	// BackendTFJSONKey is backend.tf.json: backend.tf in JSON syntax.
	BackendTFJSONKey = "backend.tf.json"
	// BackendTFBackendKey is backend.tfbackend: the backend settings at top
	// level, for `terraform init -backend-config=backend.tfbackend`.
	BackendTFBackendKey = "backend.tfbackend"
)

// Errors returned, wrapped, by the renderers. Test for them with
// [errors.Is]; they describe a spec the user must fix.
var (
	// ErrMissingRequired is returned when an attribute Terraform requires
	// (http address; cos bucket and region; assume_role role_arn and
	// session_name) is empty.
	ErrMissingRequired = errors.New("required attribute is missing")
	// ErrInvalidOverride is returned for an override with a malformed path,
	// a value that is not valid JSON or breaks the limits on override
	// values ([MaxOverrideDepth] and the other MaxOverride constants), a
	// path that conflicts with another attribute or block, or a value for
	// a nested block (such as the cos backend's assume_role) that is not
	// an object of attribute names: files would disagree on it.
	ErrInvalidOverride = errors.New("invalid override")
	// ErrCredentialOverride is returned, together with ErrInvalidOverride,
	// for an override naming a credential attribute: credentials come only
	// from Secret references.
	ErrCredentialOverride = errors.New("override names a credential attribute")
	// ErrRenderTooLarge is returned when the rendered files are larger
	// than a ConfigMap can hold ([MaxConfigMapDataBytes]).
	ErrRenderTooLarge = errors.New("rendered files are too large for a ConfigMap")
)

// MaxConfigMapDataBytes is the largest ConfigMap data the API server
// accepts: the sum of the lengths of every key and value (1 MiB), the
// bound its validation takes from corev1.MaxSecretSize.
const MaxConfigMapDataBytes = corev1.MaxSecretSize

// Files are the rendered configuration files, keyed by file name.
type Files struct {
	// BackendTF is backend.tf: `terraform { backend "<type>" { ... } }`.
	BackendTF []byte
	// BackendTFJSON is backend.tf.json, the same configuration in
	// Terraform's JSON syntax, indented by two spaces.
	BackendTFJSON []byte
	// BackendTFBackend is backend.tfbackend, the backend's attributes and
	// nested blocks at top level.
	BackendTFBackend []byte
	// Needs are the features of the runner table ([Features]) that a
	// runner must read for the files, and the credentials Secret, to mean
	// what the spec says; sorted. [Compatible] turns them into the runners
	// that can use them.
	Needs []FeatureID
}

// Data returns the files as ConfigMap data, keyed by file name
// ([BackendTFKey], [BackendTFJSONKey], [BackendTFBackendKey]).
func (f Files) Data() map[string]string {
	return map[string]string{
		BackendTFKey:        string(f.BackendTF),
		BackendTFJSONKey:    string(f.BackendTFJSON),
		BackendTFBackendKey: string(f.BackendTFBackend),
	}
}

// DataSize returns the size [Files.Data] has as ConfigMap data, counted as
// the API server counts it: the bytes of every key and every value.
func (f Files) DataSize() int {
	return len(BackendTFKey) + len(f.BackendTF) +
		len(BackendTFJSONKey) + len(f.BackendTFJSON) +
		len(BackendTFBackendKey) + len(f.BackendTFBackend)
}

// CheckDataSize returns an error wrapping [ErrRenderTooLarge] when the
// files do not fit in a ConfigMap: when [Files.DataSize] is more than
// [MaxConfigMapDataBytes]. [HTTPFiles] and [CosFiles] already check it; a
// caller that builds Files some other way checks it before building the
// ConfigMap, and treats the error as a spec to fix (a stall), not as a
// failure to retry.
func (f Files) CheckDataSize() error {
	if size := f.DataSize(); size > MaxConfigMapDataBytes {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrRenderTooLarge, size, MaxConfigMapDataBytes)
	}
	return nil
}

// renderFiles writes the backend block body b, of backend type backendType,
// in the three formats for runner (nil when the spec names none), records
// what they need of the runner (the features of b, of the JSON strings and
// extra), refuses a runner that cannot read them with
// [ErrUnsupportedByRunner], and refuses files too large for a ConfigMap
// with [ErrRenderTooLarge].
func renderFiles(backendType string, b *body, runner *backendsv1alpha1.Runner, extra ...FeatureID) (Files, error) {
	version, err := runnerVersion(runner)
	if err != nil {
		return Files{}, err
	}
	escape := escapesJSONTemplates(runner, version)
	needs := append(bodyNeeds(backendType, b), extra...)
	switch {
	case escape && b.anyString(changedByEscaping):
		needs = append(needs, FeatureJSONEscapedTemplates)
	case !escape && b.anyString(hasTemplateIntroducer):
		needs = append(needs, FeatureJSONLiteralTemplates)
	}
	needs = sortedNeeds(needs)
	if err := checkRunner(runner, version, needs); err != nil {
		return Files{}, err
	}
	files, err := writeFiles(backendType, b, escape)
	if err != nil {
		return Files{}, err
	}
	files.Needs = needs
	if err := files.CheckDataSize(); err != nil {
		return Files{}, err
	}
	return files, nil
}

// writeFiles writes the backend block body b, of backend type backendType,
// in the three formats; escapeJSON doubles "${" and "%{" in the strings of
// backend.tf.json.
func writeFiles(backendType string, b *body, escapeJSON bool) (Files, error) {
	js, err := backendJSON(backendType, b, escapeJSON)
	if err != nil {
		return Files{}, err
	}
	return Files{
		BackendTF:        backendHCL(backendType, b),
		BackendTFJSON:    js,
		BackendTFBackend: tfbackendHCL(b),
	}, nil
}
