package render

import (
	"fmt"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// FeatureID names something rendered files may need of the runner that
// reads them.
type FeatureID string

// The features whose support differs between the runners the operator
// knows. Everything else the renderers write, every known runner reads.
const (
	// FeatureCosEndpoint is the cos backend's endpoint attribute.
	FeatureCosEndpoint FeatureID = "cos.endpoint"
	// FeatureCosDomain is the cos backend's domain attribute.
	FeatureCosDomain FeatureID = "cos.domain"
	// FeatureCosExternalID is the cos backend's assume_role.external_id.
	FeatureCosExternalID FeatureID = "cos.assume_role.external_id"
	// FeatureCosAccelerate is the cos backend's accelerate attribute.
	FeatureCosAccelerate FeatureID = "cos.accelerate"
	// FeatureCosAssumeRole is the cos backend's assume_role block.
	FeatureCosAssumeRole FeatureID = "cos.assume_role"
	// FeatureHTTPHeaders is the http backend's headers attribute, which
	// only an override can set.
	FeatureHTTPHeaders FeatureID = "http.headers"
	// FeatureHTTPClientCertificate is the http backend's client
	// certificate and key for mutual TLS, from
	// TF_HTTP_CLIENT_CERTIFICATE_PEM and TF_HTTP_CLIENT_PRIVATE_KEY_PEM.
	FeatureHTTPClientCertificate FeatureID = "http.client_certificate_pem"
	// FeatureHTTPClientCA is the http backend's CA bundle, from
	// TF_HTTP_CLIENT_CA_CERTIFICATE_PEM.
	FeatureHTTPClientCA FeatureID = "http.client_ca_certificate_pem"
	// FeatureJSONLiteralTemplates is a string of backend.tf.json holding
	// "${" or "%{" written as it is: runners that decode the backend block
	// without an evaluation context read it literally.
	FeatureJSONLiteralTemplates FeatureID = "json.literal_templates"
	// FeatureJSONEscapedTemplates is a string of backend.tf.json holding
	// "${" or "%{" written doubled, "$${" and "%%{": runners that evaluate
	// the backend block read it as the original string.
	FeatureJSONEscapedTemplates FeatureID = "json.escaped_templates"
	// FeatureStateEncryption is OpenTofu's state encryption, configured
	// by TF_ENCRYPTION in the credentials Secret.
	FeatureStateEncryption FeatureID = "state_encryption"
)

// Feature is one row of the runner table.
type Feature struct {
	// ID names the feature.
	ID FeatureID
	// Setting says, in messages, which part of the spec needs it.
	Setting string
	// Support gives, per flavor, the versions that read the feature as the
	// operator means it. A flavor that is absent reads it in no version.
	Support map[backendsv1alpha1.RunnerFlavor]Range
}

// Oldest is, per flavor, the oldest version the table knows: runner
// versions before it are refused, and ranges start there.
var Oldest = map[backendsv1alpha1.RunnerFlavor]Version{
	backendsv1alpha1.RunnerTerraform: {Major: 1},
	backendsv1alpha1.RunnerOpenTofu:  {Major: 1, Minor: 6},
}

// flavors are the runner flavors, in the order status lists them.
var flavors = []backendsv1alpha1.RunnerFlavor{backendsv1alpha1.RunnerTerraform, backendsv1alpha1.RunnerOpenTofu}

// Features is the runner table: every feature whose support differs
// between the runners the operator knows, with the versions that read it.
// The tests prove each row against the real terraform and tofu binaries
// (an init that succeeds or fails as the row says), and docs/runners.md
// is checked against it.
var Features = []Feature{
	{
		ID:      FeatureCosEndpoint,
		Setting: "spec.endpoint (the cos backend's endpoint)",
		Support: map[backendsv1alpha1.RunnerFlavor]Range{backendsv1alpha1.RunnerTerraform: since(Version{1, 6, 0})},
	},
	{
		ID:      FeatureCosDomain,
		Setting: "spec.domain (the cos backend's domain)",
		Support: map[backendsv1alpha1.RunnerFlavor]Range{backendsv1alpha1.RunnerTerraform: since(Version{1, 6, 0})},
	},
	{
		ID:      FeatureCosExternalID,
		Setting: "spec.assumeRole.externalId (the cos backend's assume_role.external_id)",
		Support: map[backendsv1alpha1.RunnerFlavor]Range{backendsv1alpha1.RunnerTerraform: since(Version{1, 10, 0})},
	},
	{
		ID:      FeatureCosAccelerate,
		Setting: "spec.accelerate (the cos backend's accelerate)",
		Support: map[backendsv1alpha1.RunnerFlavor]Range{
			backendsv1alpha1.RunnerTerraform: since(Version{1, 3, 0}),
			backendsv1alpha1.RunnerOpenTofu:  since(Version{1, 6, 0}),
		},
	},
	{
		ID:      FeatureCosAssumeRole,
		Setting: "spec.assumeRole (the cos backend's assume_role block)",
		Support: map[backendsv1alpha1.RunnerFlavor]Range{
			backendsv1alpha1.RunnerTerraform: since(Version{1, 4, 0}),
			backendsv1alpha1.RunnerOpenTofu:  since(Version{1, 6, 0}),
		},
	},
	{
		ID:      FeatureHTTPHeaders,
		Setting: "the override of headers (the http backend's headers)",
		Support: map[backendsv1alpha1.RunnerFlavor]Range{backendsv1alpha1.RunnerOpenTofu: since(Version{1, 7, 0})},
	},
	{
		ID:      FeatureHTTPClientCertificate,
		Setting: "spec.tls.clientCertificateSecretRef (TF_HTTP_CLIENT_CERTIFICATE_PEM, TF_HTTP_CLIENT_PRIVATE_KEY_PEM)",
		Support: map[backendsv1alpha1.RunnerFlavor]Range{
			backendsv1alpha1.RunnerTerraform: since(Version{1, 4, 0}),
			backendsv1alpha1.RunnerOpenTofu:  since(Version{1, 6, 0}),
		},
	},
	{
		ID:      FeatureHTTPClientCA,
		Setting: "spec.tls.caCertificate (TF_HTTP_CLIENT_CA_CERTIFICATE_PEM)",
		Support: map[backendsv1alpha1.RunnerFlavor]Range{
			backendsv1alpha1.RunnerTerraform: since(Version{1, 4, 0}),
			backendsv1alpha1.RunnerOpenTofu:  since(Version{1, 6, 0}),
		},
	},
	{
		ID:      FeatureJSONLiteralTemplates,
		Setting: `a string holding "${" or "%{", written as it is in backend.tf.json`,
		Support: map[backendsv1alpha1.RunnerFlavor]Range{
			backendsv1alpha1.RunnerTerraform: since(Version{1, 0, 0}),
			backendsv1alpha1.RunnerOpenTofu:  {Since: Version{1, 6, 0}, Until: Version{1, 8, 0}},
		},
	},
	{
		ID:      FeatureJSONEscapedTemplates,
		Setting: `a string holding "${" or "%{", written doubled in backend.tf.json`,
		Support: map[backendsv1alpha1.RunnerFlavor]Range{backendsv1alpha1.RunnerOpenTofu: since(Version{1, 8, 0})},
	},
	{
		ID:      FeatureStateEncryption,
		Setting: "spec.encryption (TF_ENCRYPTION)",
		Support: map[backendsv1alpha1.RunnerFlavor]Range{backendsv1alpha1.RunnerOpenTofu: since(Version{1, 7, 0})},
	},
}

// feature returns the row of id.
func feature(id FeatureID) Feature {
	for _, f := range Features {
		if f.ID == id {
			return f
		}
	}
	panic(fmt.Sprintf("render: feature %q is not in the runner table", id))
}

// readBy reports whether flavor reads f at version. A nil version is a
// current release: it reads the features whose range has no upper bound.
func (f Feature) readBy(flavor backendsv1alpha1.RunnerFlavor, version *Version) bool {
	support, ok := f.Support[flavor]
	switch {
	case !ok:
		return false
	case version == nil:
		return !support.bounded()
	}
	return support.contains(*version)
}
