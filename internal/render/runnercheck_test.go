package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

func TestCompatible(t *testing.T) {
	terraform, tofu := backendsv1alpha1.RunnerTerraform, backendsv1alpha1.RunnerOpenTofu
	cases := map[string]struct {
		needs []FeatureID
		want  []backendsv1alpha1.CompatibleRunner
	}{
		"nothing": {want: []backendsv1alpha1.CompatibleRunner{{Flavor: terraform, Versions: ">= 1.0.0"}, {Flavor: tofu, Versions: ">= 1.6.0"}}},
		"mutual TLS": {needs: []FeatureID{FeatureHTTPClientCA, FeatureHTTPClientCertificate},
			want: []backendsv1alpha1.CompatibleRunner{{Flavor: terraform, Versions: ">= 1.4.0"}, {Flavor: tofu, Versions: ">= 1.6.0"}}},
		"endpoint and external_id: the later bound": {needs: []FeatureID{FeatureCosEndpoint, FeatureCosExternalID},
			want: []backendsv1alpha1.CompatibleRunner{{Flavor: terraform, Versions: ">= 1.10.0"}}},
		"literal templates: OpenTofu before 1.8": {needs: []FeatureID{FeatureJSONLiteralTemplates},
			want: []backendsv1alpha1.CompatibleRunner{{Flavor: terraform, Versions: ">= 1.0.0"}, {Flavor: tofu, Versions: ">= 1.6.0, < 1.8.0"}}},
		"headers and literal templates: one OpenTofu minor": {needs: []FeatureID{FeatureHTTPHeaders, FeatureJSONLiteralTemplates},
			want: []backendsv1alpha1.CompatibleRunner{{Flavor: tofu, Versions: ">= 1.7.0, < 1.8.0"}}},
		"escaped templates and endpoint: none": {needs: []FeatureID{FeatureJSONEscapedTemplates, FeatureCosEndpoint},
			want: []backendsv1alpha1.CompatibleRunner{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Compatible(tc.needs)); diff != "" {
				t.Errorf("Compatible(%v) (-want +got):\n%s", tc.needs, diff)
			}
		})
	}
}

func TestUnsupported(t *testing.T) {
	terraform, tofu := backendsv1alpha1.RunnerTerraform, backendsv1alpha1.RunnerOpenTofu
	cases := map[string]struct {
		runner  backendsv1alpha1.Runner
		needs   []FeatureID
		want    []FeatureID
		wantErr bool
	}{
		"terraform 1.5.7 and endpoint":        {runner: backendsv1alpha1.Runner{Flavor: terraform, Version: "1.5.7"}, needs: []FeatureID{FeatureCosEndpoint}, want: []FeatureID{FeatureCosEndpoint}},
		"terraform 1.6 and endpoint":          {runner: backendsv1alpha1.Runner{Flavor: terraform, Version: "1.6"}, needs: []FeatureID{FeatureCosEndpoint}},
		"terraform, no version, and endpoint": {runner: backendsv1alpha1.Runner{Flavor: terraform}, needs: []FeatureID{FeatureCosEndpoint}},
		"opentofu, no version, and endpoint":  {runner: backendsv1alpha1.Runner{Flavor: tofu}, needs: []FeatureID{FeatureCosEndpoint, FeatureCosAccelerate}, want: []FeatureID{FeatureCosEndpoint}},
		"opentofu, no version, literal templates: bounded range": {runner: backendsv1alpha1.Runner{Flavor: tofu}, needs: []FeatureID{FeatureJSONLiteralTemplates},
			want: []FeatureID{FeatureJSONLiteralTemplates}},
		"opentofu 1.7.3, literal templates": {runner: backendsv1alpha1.Runner{Flavor: tofu, Version: "1.7.3"}, needs: []FeatureID{FeatureJSONLiteralTemplates}},
		"opentofu 1.8, literal templates":   {runner: backendsv1alpha1.Runner{Flavor: tofu, Version: "1.8"}, needs: []FeatureID{FeatureJSONLiteralTemplates}, want: []FeatureID{FeatureJSONLiteralTemplates}},
		"opentofu older than known":         {runner: backendsv1alpha1.Runner{Flavor: tofu, Version: "1.5.0"}, wantErr: true},
		"terraform older than known":        {runner: backendsv1alpha1.Runner{Flavor: terraform, Version: "0.14"}, wantErr: true},
		"a malformed version":               {runner: backendsv1alpha1.Runner{Flavor: terraform, Version: "one"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Unsupported(tc.runner, tc.needs)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Unsupported: %v, want error %t", err, tc.wantErr)
			}
			var ids []FeatureID
			for _, f := range got {
				ids = append(ids, f.ID)
			}
			if diff := cmp.Diff(tc.want, ids); diff != "" {
				t.Errorf("Unsupported(%v, %v) (-want +got):\n%s", tc.runner, tc.needs, diff)
			}
		})
	}
}

// TestRenderForRunner checks what the renderers record and refuse for
// spec.runner: the needs of the files, the refusal naming the setting and
// who reads it, and backend.tf.json written for the runner.
func TestRenderForRunner(t *testing.T) {
	tofu := &backendsv1alpha1.Runner{Flavor: backendsv1alpha1.RunnerOpenTofu}
	t.Run("cos needs", func(t *testing.T) {
		f, err := CosFiles(backendsv1alpha1.CosBackendSpec{Bucket: testBucket, Accelerate: new(false),
			AssumeRole: &backendsv1alpha1.AssumeRole{RoleArn: "r", SessionName: "s-1"},
			Overrides:  []backendsv1alpha1.Override{overrideJSON("domain", `null`), overrideJSON("assume_role.external_id", `"e"`)}}, testRegion)
		if err != nil {
			t.Fatal(err)
		}
		want := []FeatureID{FeatureCosAccelerate, FeatureCosAssumeRole, FeatureCosExternalID, FeatureCosDomain}
		if diff := cmp.Diff(sortedNeeds(want), f.Needs); diff != "" {
			t.Errorf("needs (-want +got):\n%s", diff)
		}
	})
	t.Run("an override OpenTofu cannot read is refused naming it and its readers", func(t *testing.T) {
		_, err := CosFiles(backendsv1alpha1.CosBackendSpec{Bucket: testBucket, BackendCommonSpec: backendsv1alpha1.BackendCommonSpec{Runner: tofu},
			Overrides: []backendsv1alpha1.Override{overrideJSON("domain", `"tencentcloudapi.com"`)}}, testRegion)
		if !errors.Is(err, ErrUnsupportedByRunner) {
			t.Fatalf("err = %v, want ErrUnsupportedByRunner", err)
		}
		for _, want := range []string{"opentofu cannot read", "spec.domain", "read by terraform >= 1.6.0"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	})
	t.Run("backend.tf.json for OpenTofu doubles template introducers", func(t *testing.T) {
		spec := backendsv1alpha1.HttpBackendSpec{Address: "https://s.example.com/state?a=${x}&b=%{y}&c=$${z}", Username: "u\rv", BackendCommonSpec: backendsv1alpha1.BackendCommonSpec{Runner: tofu}}
		f, err := HTTPFiles(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"address": "https://s.example.com/state?a=$${x}&b=%%{y}&c=$$${z}"`, `"username": "u${\"\\r\"}v"`} {
			if !strings.Contains(string(f.BackendTFJSON), want) {
				t.Errorf("backend.tf.json lacks %s:\n%s", want, f.BackendTFJSON)
			}
		}
		if diff := cmp.Diff([]FeatureID{FeatureJSONEscapedTemplates}, f.Needs); diff != "" {
			t.Errorf("needs (-want +got):\n%s", diff)
		}
		spec.Runner = nil
		if f, err = HTTPFiles(spec); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(f.BackendTFJSON), `a=${x}&b=%{y}&c=$${z}`) {
			t.Errorf("backend.tf.json for no runner in particular changed the address:\n%s", f.BackendTFJSON)
		}
		if diff := cmp.Diff([]FeatureID{FeatureJSONLiteralTemplates}, f.Needs); diff != "" {
			t.Errorf("needs (-want +got):\n%s", diff)
		}
	})
}
