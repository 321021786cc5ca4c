package v1alpha1_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// crdDir holds the CRDs that `make manifests` generates from the markers.
var crdDir = filepath.Join("..", "..", "config", "crd", "bases")

// The generated CRDs, by file name.
const (
	httpBackendCRD = "backends.infrastate.io_httpbackends.yaml"
	cosBackendCRD  = "backends.infrastate.io_cosbackends.yaml"
	remoteStateCRD = "backends.infrastate.io_remotestates.yaml"
)

// field names one property of a CRD's schema: a JSON path from the
// version's root, with [*] for the items of a list.
type field struct {
	crd  string
	path string
}

// seconds is d in whole seconds, as the API counts retry waits and
// session durations.
func seconds(d time.Duration) int64 { return int64(d / time.Second) }

// TestCRDDefaults checks every default: of the generated CRDs against the
// Go constant it documents. A +kubebuilder:default marker cannot name a
// constant, so this table is what keeps the two from drifting: a marker
// changed without its constant, a marker added without a row, or a row
// whose marker went away all fail.
func TestCRDDefaults(t *testing.T) {
	unobserved := map[string]any{"observedGeneration": backendsv1alpha1.UnobservedGeneration}
	want := map[field]any{
		// Terraform's http backend defaults.
		{httpBackendCRD, ".spec.updateMethod"}: stateclient.DefaultUpdateMethod,
		{httpBackendCRD, ".spec.lockMethod"}:   stateclient.DefaultLockMethod,
		{httpBackendCRD, ".spec.unlockMethod"}: stateclient.DefaultUnlockMethod,
		{httpBackendCRD, ".spec.retryMax"}:     stateclient.DefaultRetryMax,
		{httpBackendCRD, ".spec.retryWaitMin"}: seconds(stateclient.DefaultRetryWaitMin),
		{httpBackendCRD, ".spec.retryWaitMax"}: seconds(stateclient.DefaultRetryWaitMax),
		// Terraform's cos backend defaults.
		{cosBackendCRD, ".spec.assumeRole.sessionDuration"}: seconds(cos.DefaultSessionDuration),
		// The API's own.
		{httpBackendCRD, ".spec.tls.caCertificate.key"}: backendsv1alpha1.DefaultCAKey,
		{remoteStateCRD, ".spec.workspace"}:             backendsv1alpha1.DefaultWorkspace,
		{remoteStateCRD, ".spec.outputs[*].type"}:       backendsv1alpha1.DefaultOutputType,
		{httpBackendCRD, ".status"}:                     unobserved,
		{cosBackendCRD, ".status"}:                      unobserved,
		{remoteStateCRD, ".status"}:                     unobserved,
	}

	got := map[field]any{}
	for _, crd := range []string{httpBackendCRD, cosBackendCRD, remoteStateCRD} {
		walk(t, crd, func(path string, s apiextensionsv1.JSONSchemaProps) {
			if s.Default == nil {
				return
			}
			var v any
			if err := json.Unmarshal(s.Default.Raw, &v); err != nil {
				t.Fatalf("%s %s: default %s: %v", crd, path, s.Default.Raw, err)
			}
			got[field{crd, path}] = v
		})
	}
	// Compare as JSON decodes them, so that 2 and float64(2) are equal.
	normalized := map[field]any{}
	for f, v := range want {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var n any
		if err := json.Unmarshal(data, &n); err != nil {
			t.Fatal(err)
		}
		normalized[f] = n
	}
	if diff := cmp.Diff(normalized, got); diff != "" {
		t.Errorf("CRD defaults differ from their Go constants (-constants +CRDs); fix the +kubebuilder:default marker "+
			"and run make manifests, or add the new default to this table:\n%s", diff)
	}
}

// TestProbeIntervalBounds checks that the CEL rule of every interval in
// the CRDs allows what MinProbeInterval and MaxProbeInterval say (and 0s
// where it turns periodic probing off), and that no interval lacks a row.
func TestProbeIntervalBounds(t *testing.T) {
	zeroAllowed := map[field]bool{
		{httpBackendCRD, ".spec.probe.interval"}: true,
		{cosBackendCRD, ".spec.probe.interval"}:  true,
		{remoteStateCRD, ".spec.probe.interval"}: true,
		{remoteStateCRD, ".spec.interval"}:       false, // deprecated
	}
	literal := regexp.MustCompile(`duration\('([^']*)'\)`)
	seen := map[field]bool{}
	for _, crd := range []string{httpBackendCRD, cosBackendCRD, remoteStateCRD} {
		walk(t, crd, func(path string, s apiextensionsv1.JSONSchemaProps) {
			if filepath.Ext(path) != ".interval" {
				return
			}
			f := field{crd, path}
			zero, ok := zeroAllowed[f]
			if !ok {
				t.Errorf("%s %s: an interval without a row in this test", crd, path)
				return
			}
			seen[f] = true
			want := []time.Duration{backendsv1alpha1.MinProbeInterval, backendsv1alpha1.MaxProbeInterval}
			if zero {
				want = append(want, 0)
			}
			var bounds []time.Duration
			for _, v := range s.XValidations {
				for _, m := range literal.FindAllStringSubmatch(v.Rule, -1) {
					d, err := time.ParseDuration(m[1])
					if err != nil {
						t.Fatalf("%s %s: rule %q: %v", crd, path, v.Rule, err)
					}
					bounds = append(bounds, d)
				}
			}
			slices.Sort(want)
			slices.Sort(bounds)
			if diff := cmp.Diff(want, slices.Compact(bounds)); diff != "" {
				t.Errorf("%s %s: the durations of its CEL rules differ from the Go bounds (-Go +CEL):\n%s", crd, path, diff)
			}
		})
	}
	for f := range zeroAllowed {
		if !seen[f] {
			t.Errorf("%s %s: no such interval in the CRD", f.crd, f.path)
		}
	}
}

// walk calls visit for every property of the schema of each version of
// the CRD in file crd, with its JSON path.
func walk(t *testing.T, crd string, visit func(path string, s apiextensionsv1.JSONSchemaProps)) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(crdDir, crd))
	if err != nil {
		t.Fatal(err)
	}
	var def apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &def); err != nil {
		t.Fatalf("%s: %v", crd, err)
	}
	if len(def.Spec.Versions) == 0 {
		t.Fatalf("%s has no versions", crd)
	}
	for _, v := range def.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			t.Fatalf("%s version %s has no schema", crd, v.Name)
		}
		walkSchema("", *v.Schema.OpenAPIV3Schema, visit)
	}
}

// walkSchema visits s and what it contains.
func walkSchema(path string, s apiextensionsv1.JSONSchemaProps, visit func(string, apiextensionsv1.JSONSchemaProps)) {
	if path != "" {
		visit(path, s)
	}
	for name, p := range s.Properties {
		walkSchema(path+"."+name, p, visit)
	}
	if s.Items != nil && s.Items.Schema != nil {
		walkSchema(path+"[*]", *s.Items.Schema, visit)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		walkSchema(path+".*", *s.AdditionalProperties.Schema, visit)
	}
}
