// Package validation proves, against a real kube-apiserver, that the CRDs
// accept the samples, apply the documented defaults and reject bad
// manifests with messages that name the field and the rule.
package validation

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	installAdmissionPolicy(context.Background())
})

// installAdmissionPolicy creates the ValidatingAdmissionPolicy and binding
// of config/admission, as `make deploy` does, and waits until the API
// server enforces them (it loads policies asynchronously).
func installAdmissionPolicy(ctx context.Context) {
	objs, err := readObjects(filepath.Join(testenv.RepoRoot(), "config", "admission", "validating_admission_policy.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(objs).To(HaveLen(2))
	for _, obj := range objs {
		Expect(k8sClient.Create(ctx, obj)).To(Succeed(), "creating %s %s", obj.GetKind(), obj.GetName())
	}
	ns := newNamespace(ctx)
	Eventually(func() error {
		probe := httpBackend(overrideValue("update_method", []any{[]any{"nested"}}))
		probe.SetNamespace(ns)
		probe.SetName("")
		probe.SetGenerateName("policy-probe-")
		err := k8sClient.Create(ctx, probe)
		if err == nil {
			_ = k8sClient.Delete(ctx, probe)
		}
		return err
	}, time.Minute, 200*time.Millisecond).Should(WithTransform(apierrors.IsInvalid, BeTrue()), "the admission policy never took effect")
}

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
