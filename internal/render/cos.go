package render

import (
	"fmt"
	"time"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos"
)

// defaultSessionDurationSeconds is Terraform's assume_role.session_duration
// in whole seconds, as the API and Terraform count it; a constant
// conversion, so the compiler checks that it fits in an int32.
const defaultSessionDurationSeconds = int32(cos.DefaultSessionDuration / time.Second)

// cosBlockTypes are the nested blocks of Terraform's cos backend. Its
// legacy SDK schema declares assume_role as a set of at most one resource,
// which Terraform decodes as a block: `assume_role { ... }` in HCL (an
// `assume_role = { ... }` attribute is an "Unsupported argument"), and in
// JSON an object, null or [] (the last two meaning no block).
var cosBlockTypes = map[string]bool{"assume_role": true}

// CosFiles renders the "cos" backend of spec in region, the effective
// region (spec.region or the manager's default; spec.region itself is not
// read). Attributes are written in this order: bucket, region, prefix, key,
// encrypt, acl, accelerate, endpoint, domain, then the assume_role block
// (role_arn, session_name, session_duration, policy, external_id), then
// spec.overrides, where an object value for assume_role sets attributes of
// that block (see [ErrInvalidOverride] for the values refused). bucket and region are always written; encrypt and accelerate whenever set, even to
// Terraform's default; the others only when set to something other than
// Terraform's default (cos.DefaultKey, cos.DefaultACL,
// cos.DefaultSessionDuration). The secret id, key and token are never written: see
// [CosCredentials].
//
// Not every runner knows endpoint, domain and assume_role.external_id, nor
// reads spec.encryption (TF_ENCRYPTION, see [EncryptionEnv]): [Files.Needs]
// records them, and a spec.runner that cannot read them is
// refused with [ErrUnsupportedByRunner] (see [Features]).
//
// It fails with [ErrMissingRequired] when bucket or region is empty, or
// when assume_role lacks role_arn or session_name, with
// [ErrInvalidOverride] for a bad override (see the package's limits), and
// with [ErrRenderTooLarge] when the files do not fit in a ConfigMap.
func CosFiles(spec backendsv1alpha1.CosBackendSpec, region string) (Files, error) {
	b, err := cosBody(spec, region)
	if err != nil {
		return Files{}, fmt.Errorf("rendering the cos backend: %w", err)
	}
	if err := applyOverrides(b, spec.Overrides); err != nil {
		return Files{}, fmt.Errorf("rendering the cos backend: %w", err)
	}
	files, err := renderFiles("cos", b, spec.Runner, encryptionNeeds(spec.Encryption)...)
	if err != nil {
		return Files{}, fmt.Errorf("rendering the cos backend: %w", err)
	}
	return files, nil
}

// cosBody returns the typed attributes and blocks of spec.
func cosBody(spec backendsv1alpha1.CosBackendSpec, region string) (*body, error) {
	switch {
	case spec.Bucket == "":
		return nil, fmt.Errorf("%w: bucket", ErrMissingRequired)
	case region == "":
		return nil, fmt.Errorf("%w: region (neither the backend nor the manager sets one)", ErrMissingRequired)
	}
	b := &body{blockTypes: cosBlockTypes}
	b.addString("bucket", spec.Bucket)
	b.addString("region", region)
	if spec.Prefix != "" {
		b.addString("prefix", spec.Prefix)
	}
	addStringUnlessDefault(b, "key", spec.Key, cos.DefaultKey)
	if spec.Encrypt != nil {
		b.addBool("encrypt", *spec.Encrypt)
	}
	addStringUnlessDefault(b, "acl", spec.ACL, cos.DefaultACL)
	if spec.Accelerate != nil {
		b.addBool("accelerate", *spec.Accelerate)
	}
	if spec.Endpoint != "" {
		b.addString("endpoint", spec.Endpoint)
	}
	if spec.Domain != "" {
		b.addString("domain", spec.Domain)
	}
	if spec.AssumeRole != nil {
		ar, err := assumeRoleBody(*spec.AssumeRole)
		if err != nil {
			return nil, err
		}
		b.addBlock("assume_role", ar)
	}
	return b, nil
}

// assumeRoleBody returns the content of the assume_role block.
func assumeRoleBody(ar backendsv1alpha1.AssumeRole) (*body, error) {
	switch {
	case ar.RoleArn == "":
		return nil, fmt.Errorf("%w: assume_role.role_arn", ErrMissingRequired)
	case ar.SessionName == "":
		return nil, fmt.Errorf("%w: assume_role.session_name", ErrMissingRequired)
	}
	b := &body{}
	b.addString("role_arn", ar.RoleArn)
	b.addString("session_name", ar.SessionName)
	addIntUnlessDefault(b, "session_duration", ar.SessionDuration, defaultSessionDurationSeconds)
	if ar.Policy != "" {
		b.addString("policy", ar.Policy)
	}
	if ar.ExternalID != "" {
		b.addString("external_id", ar.ExternalID)
	}
	return b, nil
}
