package render

import "errors"

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
	// a value that is not valid JSON, or a path that conflicts with another
	// attribute or block.
	ErrInvalidOverride = errors.New("invalid override")
	// ErrCredentialOverride is returned, together with ErrInvalidOverride,
	// for an override naming a credential attribute: credentials come only
	// from Secret references.
	ErrCredentialOverride = errors.New("override names a credential attribute")
)

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

// renderFiles writes the backend block body b, of backend type backendType,
// in the three formats.
func renderFiles(backendType string, b *body) (Files, error) {
	js, err := backendJSON(backendType, b)
	if err != nil {
		return Files{}, err
	}
	return Files{
		BackendTF:        backendHCL(backendType, b),
		BackendTFJSON:    js,
		BackendTFBackend: tfbackendHCL(b),
	}, nil
}
