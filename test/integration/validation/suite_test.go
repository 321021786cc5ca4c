// Package validation proves, against a real kube-apiserver, that the CRDs
// accept the samples, apply the documented defaults and reject bad
// manifests with messages that name the field and the rule.
package validation

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/infrastate/backend-operator/internal/testenv"
)

var (
	testEnv   *envtest.Environment
	k8sClient client.Client
)

func TestValidation(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "CRD validation suite")
}

var _ = BeforeSuite(func() {
	var err error
	testEnv, err = testenv.New()
	Expect(err).NotTo(HaveOccurred())
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// newNamespace gives the current spec a namespace of its own.
func newNamespace(ctx context.Context) string {
	ns, err := testenv.CreateNamespace(ctx, k8sClient, "validation")
	Expect(err).NotTo(HaveOccurred())
	return ns
}
