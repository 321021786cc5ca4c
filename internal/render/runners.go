package render

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// ErrUnsupportedByRunner is returned, wrapped, when spec.runner names a
// runner that cannot read what the spec renders. The message names each
// setting and the runner.
var ErrUnsupportedByRunner = errors.New("the runner cannot read the rendered configuration")

// Version is a runner release, MAJOR.MINOR.PATCH.
type Version struct {
	Major, Minor, Patch int
}

// ParseVersion parses MAJOR.MINOR or MAJOR.MINOR.PATCH, as spec.runner.version
// spells a version; MAJOR.MINOR is its first release, MAJOR.MINOR.0.
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 2 && len(parts) != 3 {
		return Version{}, fmt.Errorf("version %q is not MAJOR.MINOR or MAJOR.MINOR.PATCH", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || v > 9999 || p != strconv.Itoa(v) {
			return Version{}, fmt.Errorf("version %q is not MAJOR.MINOR or MAJOR.MINOR.PATCH", s)
		}
		n[i] = v
	}
	return Version{Major: n[0], Minor: n[1], Patch: n[2]}, nil
}

// String returns MAJOR.MINOR.PATCH.
func (v Version) String() string {
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// compare returns -1, 0 or 1 as v is older than, the same as, or newer
// than o.
func (v Version) compare(o Version) int {
	if c := cmp.Compare(v.Major, o.Major); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Minor, o.Minor); c != 0 {
		return c
	}
	return cmp.Compare(v.Patch, o.Patch)
}

// Range is the versions from Since up to, not including, Until. A zero
// Until has no upper bound.
type Range struct {
	Since, Until Version
}

// bounded reports whether r has an upper bound.
func (r Range) bounded() bool { return r.Until != Version{} }

// contains reports whether v is in r.
func (r Range) contains(v Version) bool {
	return v.compare(r.Since) >= 0 && (!r.bounded() || v.compare(r.Until) < 0)
}

// intersect returns the versions in both r and o, and whether there are
// any.
func (r Range) intersect(o Range) (Range, bool) {
	out := r
	if o.Since.compare(out.Since) > 0 {
		out.Since = o.Since
	}
	if o.bounded() && (!out.bounded() || o.Until.compare(out.Until) < 0) {
		out.Until = o.Until
	}
	return out, !out.bounded() || out.Since.compare(out.Until) < 0
}

// String returns r as a version constraint: ">= 1.6.0" or
// ">= 1.6.0, < 1.8.0".
func (r Range) String() string {
	if !r.bounded() {
		return ">= " + r.Since.String()
	}
	return ">= " + r.Since.String() + ", < " + r.Until.String()
}

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

// since is the range from v on.
func since(v Version) Range {
	return Range{Since: v}
}

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

// Compatible returns the runners, and their versions, that read files
// needing needs as the operator means them: for each flavor, the versions
// every feature of needs supports, from the flavor's oldest known version.
// A flavor that no version of reads them is left out.
func Compatible(needs []FeatureID) []backendsv1alpha1.CompatibleRunner {
	out := []backendsv1alpha1.CompatibleRunner{}
	for _, flavor := range flavors {
		if r, ok := supportedRange(flavor, needs); ok {
			out = append(out, backendsv1alpha1.CompatibleRunner{Flavor: flavor, Versions: r.String()})
		}
	}
	return out
}

// supportedRange returns the versions of flavor that read every feature
// of needs.
func supportedRange(flavor backendsv1alpha1.RunnerFlavor, needs []FeatureID) (Range, bool) {
	r := Range{Since: Oldest[flavor]}
	for _, id := range needs {
		support, ok := feature(id).Support[flavor]
		if !ok {
			return Range{}, false
		}
		if r, ok = r.intersect(support); !ok {
			return Range{}, false
		}
	}
	return r, true
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

// runnerVersion parses the version of runner: nil when runner is nil or
// has no version. A version older than the oldest the table knows for the
// flavor is refused with ErrUnsupportedByRunner.
func runnerVersion(runner *backendsv1alpha1.Runner) (*Version, error) {
	if runner == nil || runner.Version == "" {
		return nil, nil
	}
	v, err := ParseVersion(runner.Version)
	if err != nil {
		return nil, err
	}
	if v.compare(Oldest[runner.Flavor]) < 0 {
		return nil, fmt.Errorf("%w: %s %s is older than %s, the oldest release the operator knows", ErrUnsupportedByRunner, runner.Flavor, runner.Version, Oldest[runner.Flavor])
	}
	return &v, nil
}

// Unsupported returns the features of needs that runner cannot read. A
// runner without a version is a current release: it reads the features
// whose range has no upper bound.
func Unsupported(runner backendsv1alpha1.Runner, needs []FeatureID) ([]Feature, error) {
	version, err := runnerVersion(&runner)
	if err != nil {
		return nil, err
	}
	return unsupported(runner.Flavor, version, needs), nil
}

// unsupported returns the features of needs that flavor does not read at
// version (nil: a current release).
func unsupported(flavor backendsv1alpha1.RunnerFlavor, version *Version, needs []FeatureID) []Feature {
	var out []Feature
	for _, id := range needs {
		if f := feature(id); !f.readBy(flavor, version) {
			out = append(out, f)
		}
	}
	return out
}

// checkRunner fails with ErrUnsupportedByRunner when spec.runner is set
// and cannot read a feature of needs at version (its version, as
// runnerVersion parsed it), naming each.
func checkRunner(runner *backendsv1alpha1.Runner, version *Version, needs []FeatureID) error {
	if runner == nil {
		return nil
	}
	missing := unsupported(runner.Flavor, version, needs)
	if len(missing) == 0 {
		return nil
	}
	settings := make([]string, len(missing))
	for i, f := range missing {
		var readers []string
		for _, flavor := range flavors {
			if r, ok := f.Support[flavor]; ok {
				readers = append(readers, string(flavor)+" "+r.String())
			}
		}
		settings[i] = f.Setting + ", read by " + strings.Join(readers, " and ")
	}
	return fmt.Errorf("%w: %s cannot read %s", ErrUnsupportedByRunner, runnerName(*runner), strings.Join(settings, "; "))
}

// runnerName is "opentofu 1.12.6", or "opentofu" without a version.
func runnerName(r backendsv1alpha1.Runner) string {
	if r.Version == "" {
		return string(r.Flavor)
	}
	return string(r.Flavor) + " " + r.Version
}

// escapesJSONTemplates reports whether backend.tf.json is written for a
// runner that evaluates the backend block, so that "${" and "%{" in its
// strings are doubled: one that reads FeatureJSONEscapedTemplates at
// version (its version, as runnerVersion parsed it), OpenTofu 1.8 and
// later or without a version.
func escapesJSONTemplates(runner *backendsv1alpha1.Runner, version *Version) bool {
	return runner != nil && feature(FeatureJSONEscapedTemplates).readBy(runner.Flavor, version)
}

// sortedNeeds returns needs sorted, without duplicates.
func sortedNeeds(needs []FeatureID) []FeatureID {
	slices.Sort(needs)
	return slices.Compact(needs)
}

// attributeFeatures are the attributes of the runner table, per backend
// type, by their path in the backend block ("block.attribute" inside a
// nested block).
var attributeFeatures = map[string]map[string]FeatureID{
	"cos": {
		"endpoint":                FeatureCosEndpoint,
		"domain":                  FeatureCosDomain,
		"accelerate":              FeatureCosAccelerate,
		"assume_role":             FeatureCosAssumeRole,
		"assume_role.external_id": FeatureCosExternalID,
	},
	"http": {
		"headers": FeatureHTTPHeaders,
	},
}

// bodyNeeds returns the features of the runner table that the attributes
// of b, a backend block of backendType, need. An attribute counts whatever
// its value, null included: a runner that does not know it refuses it.
func bodyNeeds(backendType string, b *body) []FeatureID {
	known := attributeFeatures[backendType]
	var needs []FeatureID
	var walk func(prefix string, b *body)
	walk = func(prefix string, b *body) {
		for _, it := range b.items {
			path := prefix + it.name
			if id, ok := known[path]; ok {
				needs = append(needs, id)
			}
			if it.block != nil {
				walk(path+".", it.block)
			}
		}
	}
	walk("", b)
	return needs
}

// anyString reports whether pred holds for a string value of b, at any
// depth.
func (b *body) anyString(pred func(string) bool) bool {
	for _, it := range b.items {
		if it.block != nil {
			if it.block.anyString(pred) {
				return true
			}
			continue
		}
		if valueHasString(it.value, pred) {
			return true
		}
	}
	return false
}

// valueHasString reports whether pred holds for v, or a value inside it,
// that is a string.
func valueHasString(v cty.Value, pred func(string) bool) bool {
	if !v.IsKnown() || v.IsNull() {
		return false
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		return pred(v.AsString())
	case ty.IsObjectType() || ty.IsMapType() || ty.IsTupleType() || ty.IsListType() || ty.IsSetType():
		for it := v.ElementIterator(); it.Next(); {
			if _, ev := it.Element(); valueHasString(ev, pred) {
				return true
			}
		}
	}
	return false
}

// hasTemplateIntroducer reports whether s holds "${" or "%{", which a
// runner that evaluates backend.tf.json reads as a template.
func hasTemplateIntroducer(s string) bool {
	return strings.Contains(s, "${") || strings.Contains(s, "%{")
}

// changedByEscaping reports whether escapeTemplateSequences changes s.
func changedByEscaping(s string) bool {
	return escapeTemplateSequences(s) != s
}
