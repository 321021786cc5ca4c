package validation

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/render"
)

// runnerFeatureManifests are, for each row of the runner table that a
// typed field sets, valid manifests needing the feature, one per kind
// that has the field. The rows set only by overrides or by how a file is
// written (featuresNotAtAdmission) are refused by the controller, with
// Stalled, not at admission.
var runnerFeatureManifests = map[render.FeatureID][]func() *unstructured.Unstructured{
	render.FeatureCosEndpoint: {func() *unstructured.Unstructured {
		return cosBackend(set("spec.endpoint", "https://cos-internal.ap-guangzhou.tencentcos.cn"))
	}},
	render.FeatureCosDomain: {func() *unstructured.Unstructured { return cosBackend(set("spec.domain", "tencentcloudapi.com")) }},
	render.FeatureCosExternalID: {func() *unstructured.Unstructured {
		return cosBackend(assumeRole(map[string]any{"roleArn": "qcs::cam::uin/1:roleName/r", "sessionName": "s-1", "externalId": "e"}))
	}},
	render.FeatureCosAccelerate: {func() *unstructured.Unstructured { return cosBackend(set("spec.accelerate", false)) }},
	render.FeatureCosAssumeRole: {func() *unstructured.Unstructured {
		return cosBackend(assumeRole(map[string]any{"roleArn": "qcs::cam::uin/1:roleName/r", "sessionName": "s-1"}))
	}},
	render.FeatureHTTPClientCertificate: {func() *unstructured.Unstructured {
		return httpBackend(set("spec.tls.clientCertificateSecretRef.name", "client-tls"))
	}},
	render.FeatureHTTPClientCA: {func() *unstructured.Unstructured {
		return httpBackend(set("spec.tls.caCertificate.secretRef.name", "ca"))
	}},
	render.FeatureStateEncryption: {
		func() *unstructured.Unstructured { return httpBackend(set("spec.encryption", encryptionSpec)) },
		func() *unstructured.Unstructured { return cosBackend(set("spec.encryption", encryptionSpec)) },
	},
}

// encryptionSpec is a spec.encryption with every field set.
var encryptionSpec = map[string]any{
	"passphraseSecretRef": map[string]any{"name": "tofu", "key": "new"},
	"fallback": map[string]any{
		"passphraseSecretRef": map[string]any{"name": "tofu", "key": "old"},
		"unencrypted":         true,
	},
}

// refusalMessages are the words of the refusal of a row whose admission
// rules do not all say "the runner in spec.runner cannot read it": the
// rule refusing encryption to Terraform says why instead.
var refusalMessages = map[render.FeatureID]string{
	render.FeatureStateEncryption: "cannot read",
}

// featuresNotAtAdmission are the rows no typed field sets.
var featuresNotAtAdmission = map[render.FeatureID]bool{
	render.FeatureHTTPHeaders:          true, // an override
	render.FeatureJSONLiteralTemplates: true, // how backend.tf.json is written
	render.FeatureJSONEscapedTemplates: true,
}

// runnersToAdmit are the runners each row is tried with: both flavors
// without a version, and versions on each side of every bound in the
// table.
var runnersToAdmit = []backendsv1alpha1.Runner{
	{Flavor: backendsv1alpha1.RunnerTerraform},
	{Flavor: backendsv1alpha1.RunnerTerraform, Version: "1.0"},
	{Flavor: backendsv1alpha1.RunnerTerraform, Version: "1.2.9"},
	{Flavor: backendsv1alpha1.RunnerTerraform, Version: "1.3.0"},
	{Flavor: backendsv1alpha1.RunnerTerraform, Version: "1.3.10"},
	{Flavor: backendsv1alpha1.RunnerTerraform, Version: "1.4"},
	{Flavor: backendsv1alpha1.RunnerTerraform, Version: "1.5.7"},
	{Flavor: backendsv1alpha1.RunnerTerraform, Version: "1.6.0"},
	{Flavor: backendsv1alpha1.RunnerTerraform, Version: "1.9.8"},
	{Flavor: backendsv1alpha1.RunnerTerraform, Version: "1.10"},
	{Flavor: backendsv1alpha1.RunnerTerraform, Version: "1.16.4"},
	{Flavor: backendsv1alpha1.RunnerTerraform, Version: "2.0"},
	{Flavor: backendsv1alpha1.RunnerOpenTofu},
	{Flavor: backendsv1alpha1.RunnerOpenTofu, Version: "1.6"},
	{Flavor: backendsv1alpha1.RunnerOpenTofu, Version: "1.6.3"},
	{Flavor: backendsv1alpha1.RunnerOpenTofu, Version: "1.7.0"},
	{Flavor: backendsv1alpha1.RunnerOpenTofu, Version: "1.12.6"},
}

var _ = Describe("Admission of spec.runner", func() {
	It("refuses exactly the typed settings the runner table says the runner cannot read", func(ctx context.Context) {
		ns := newNamespace(ctx)
		for _, f := range render.Features {
			manifests, ok := runnerFeatureManifests[f.ID]
			if !ok {
				Expect(featuresNotAtAdmission).To(HaveKey(f.ID), "feature %s has neither a manifest nor a reason to be left to the controller", f.ID)
				continue
			}
			refusal, ok := refusalMessages[f.ID]
			if !ok {
				refusal = "the runner in spec.runner cannot read it"
			}
			for _, manifest := range manifests {
				for _, runner := range runnersToAdmit {
					unsupported, err := render.Unsupported(runner, []render.FeatureID{f.ID})
					Expect(err).NotTo(HaveOccurred())
					obj := manifest()
					obj.SetNamespace(ns)
					runnerField := map[string]any{"flavor": string(runner.Flavor)}
					if runner.Version != "" {
						runnerField["version"] = runner.Version
					}
					set("spec.runner", runnerField)(obj.Object)
					err = k8sClient.Create(ctx, obj, client.DryRunAll)
					if len(unsupported) == 0 {
						Expect(err).NotTo(HaveOccurred(), "%s of a %s with runner %v", f.ID, obj.GetKind(), runner)
					} else {
						Expect(err).To(beInvalid("spec", refusal), "%s of a %s with runner %v", f.ID, obj.GetKind(), runner)
					}
				}
			}
		}
	})

	DescribeTable("refuses a runner version the operator does not know",
		func(ctx context.Context, flavor, version, message string) {
			obj := httpBackend(set("spec.runner", map[string]any{"flavor": flavor, "version": version}))
			obj.SetNamespace(newNamespace(ctx))
			Expect(k8sClient.Create(ctx, obj, client.DryRunAll)).To(beInvalid("spec.runner", message))
		},
		Entry("Terraform before 1.0", "terraform", "0.15.5", "the operator knows Terraform 1.0 and later"),
		Entry("OpenTofu before 1.6", "opentofu", "1.5.7", "OpenTofu releases start at 1.6"),
		Entry("not a version", "opentofu", "1.x", "spec.runner.version"),
		Entry("a pre-release", "terraform", "1.6.0-beta1", "spec.runner.version"),
		Entry("an unknown flavor", "pulumi", "1.0", "spec.runner.flavor"),
	)
})
