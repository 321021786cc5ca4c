package render

import (
	"errors"
	"fmt"
	"strings"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// ErrUnsupportedByRunner is returned, wrapped, when spec.runner names a
// runner that cannot read what the spec renders. The message names each
// setting and the runner.
var ErrUnsupportedByRunner = errors.New("the runner cannot read the rendered configuration")

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
