package validation

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// echoedSecret stands for a credential a careless manifest puts in a
// field that should never hold one.
const echoedSecret = "s3cr3t-Passw0rd"

// GitOps controllers copy the API server's refusal into their own status,
// where every reader of the Kustomization or Application sees it: a
// refusal must never print a value that can carry a credential.
var _ = Describe("Admission messages", func() {
	DescribeTable("never echo a value that can carry a credential",
		func(ctx context.Context, obj *unstructured.Unstructured, field, message string) {
			obj.SetNamespace(newNamespace(ctx))
			err := k8sClient.Create(ctx, obj)
			Expect(err).To(HaveOccurred())
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "refused as invalid: %v", err)
			Expect(err.Error()).To(ContainSubstring(field))
			Expect(err.Error()).To(ContainSubstring(message))
			Expect(err.Error()).NotTo(ContainSubstring(echoedSecret), "the refusal prints the value")
			Expect(err.Error()).NotTo(ContainSubstring(`Invalid value: "http`), "the refusal prints the address")
		},
		Entry("address with user information", httpBackend(set("spec.address", "https://runner:"+echoedSecret+"@state.example.com/app")),
			"spec.address", "address must not contain user information"),
		Entry("address with a token in its query", httpBackend(set("spec.address", "https://state.example.com/app?token="+echoedSecret)),
			"spec.address", "address must not carry credentials in its query string"),
		Entry("address that is not a URL, with a password", httpBackend(set("spec.address", "ftp://runner:"+echoedSecret+"@state.example.com/app")),
			"spec.address", "address must be an absolute http:// or https:// URL with a host"),
		Entry("address at a metadata service, with a password", httpBackend(set("spec.address", "http://runner:"+echoedSecret+"@169.254.169.254/app")),
			"spec.address", "address must not"),
		Entry("address too long, with a password", httpBackend(set("spec.address", "https://runner:"+echoedSecret+"@e.com/"+strings.Repeat("a", 2048))),
			"spec.address", "Too long"),
		Entry("lockAddress with user information", httpBackend(set("spec.lockAddress", "https://runner:"+echoedSecret+"@state.example.com/app")),
			"spec.lockAddress", "lockAddress must not contain user information"),
		Entry("lockAddress with a signature", httpBackend(set("spec.lockAddress", "https://state.example.com/app?X-Amz-Signature="+echoedSecret)),
			"spec.lockAddress", "lockAddress must not carry credentials"),
		Entry("unlockAddress with user information", httpBackend(set("spec.unlockAddress", "https://runner:"+echoedSecret+"@state.example.com/app")),
			"spec.unlockAddress", "unlockAddress must not contain user information"),
		Entry("unlockAddress with a password in its query", httpBackend(set("spec.unlockAddress", "https://state.example.com/app?password="+echoedSecret)),
			"spec.unlockAddress", "unlockAddress must not carry credentials"),
		Entry("COS endpoint with user information", cosBackend(set("spec.endpoint", "https://id:"+echoedSecret+"@cos-internal.ap-guangzhou.tencentcos.cn")),
			"spec.endpoint", "endpoint must look like https://cos-internal.<region>.tencentcos.cn"),
		Entry("COS domain with user information", cosBackend(set("spec.domain", "id:"+echoedSecret+"@tencentcloudapi.com")),
			"spec.domain", "domain must be a DNS domain name"),
	)
})
