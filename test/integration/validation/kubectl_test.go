package validation

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// badManifest breaks three rules at once: a scheme, a method token and the
// ordering of the retry waits.
const badManifest = `apiVersion: backends.infrastate.io/v1alpha1
kind: HttpBackend
metadata:
  name: broken
spec:
  address: ftp://state.example.com/app
  updateMethod: post
  retryWaitMin: 60
`

var _ = Describe("kubectl apply", func() {
	It("shows the user which field breaks which rule", func(ctx context.Context) {
		kubectl := newAdminKubectl()
		manifestPath := filepath.Join(kubectl.dir, "broken.yaml")
		Expect(os.WriteFile(manifestPath, []byte(badManifest), 0o600)).To(Succeed())

		out, err := kubectl.run(ctx, newNamespace(ctx), "apply", "-f", manifestPath)
		Expect(err).To(HaveOccurred(), "kubectl apply should fail:\n%s", out)
		output := strings.TrimSpace(string(out))
		Expect(output).To(ContainSubstring(`HttpBackend "broken" is invalid`))
		// An address can carry a credential: its rules never print it.
		Expect(output).To(ContainSubstring("spec.address: Forbidden: address must be an absolute http:// or https:// URL with a host"))
		Expect(output).NotTo(ContainSubstring("ftp://state.example.com/app"))
		Expect(output).To(ContainSubstring("spec.updateMethod: Invalid value"))
		Expect(output).To(ContainSubstring("updateMethod must be an upper-case HTTP method token"))
		Expect(output).To(ContainSubstring("spec.retryWaitMin: Invalid value"))
		Expect(output).To(ContainSubstring("retryWaitMin must be less than or equal to retryWaitMax"))
		GinkgoWriter.Println(output)
	}, SpecTimeout(2*time.Minute))
})

// adminKubectl runs the real kubectl as an administrator of the suite's
// API server, with a HOME of its own.
type adminKubectl struct {
	path, dir, kubeconfig string
}

// newAdminKubectl writes a kubeconfig of a system:masters user for the
// current spec.
func newAdminKubectl() adminKubectl {
	GinkgoHelper()
	user, err := testEnv.AddUser(envtest.User{Name: "validation-admin", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	k := adminKubectl{path: testtools.Kubectl(GinkgoT()), dir: GinkgoT().TempDir()}
	k.kubeconfig = filepath.Join(k.dir, "kubeconfig")
	Expect(os.WriteFile(k.kubeconfig, kubeconfig, 0o600)).To(Succeed())
	return k
}

// run runs kubectl with args in namespace and returns its combined output.
func (k adminKubectl) run(ctx context.Context, namespace string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, k.path, append([]string{"--kubeconfig", k.kubeconfig, "--namespace", namespace}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+k.dir)
	return cmd.CombinedOutput()
}
