package chart

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/infrastate/backend-operator/internal/testenv"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// The chart apply suite applies what the chart renders to a real
// kube-apiserver (envtest, with the CRDs of the chart's crds/), as
// `helm install` would, and checks what the API server then allows the
// manager's ServiceAccount. The Deployment cannot run: there is no kubelet.
var (
	applyEnv    *envtest.Environment
	applyClient client.Client
	// kubectlPath and kubeconfig run kubectl as a cluster administrator.
	kubectlPath, kubeconfig string
)

// kubectlTimeout bounds one kubectl command.
const kubectlTimeout = time.Minute

// TestChartApply is an envtest suite: make unit skips it (ENVTEST_SUITES).
func TestChartApply(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Chart apply suite")
}

var _ = BeforeSuite(func() {
	kubectlPath = testtools.Kubectl(GinkgoT())
	testtools.Helm(GinkgoT())
	var err error
	applyEnv, err = testenv.New()
	Expect(err).NotTo(HaveOccurred())
	applyEnv.CRDDirectoryPaths = []string{filepath.Join(chartDir, "crds")}
	cfg, err := applyEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	applyClient, err = client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	admin, err := applyEnv.AddUser(envtest.User{Name: "chart-admin", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	config, err := admin.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(os.WriteFile(kubeconfig, config, 0o600)).To(Succeed())
})

var _ = AfterSuite(func() {
	if applyEnv != nil {
		Expect(applyEnv.Stop()).To(Succeed())
	}
})

// kubectl runs kubectl as the administrator, with stdin, and returns its
// standard output and standard error.
func kubectl(ctx context.Context, stdin string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = []string{"HOME=" + GinkgoT().TempDir(), "PATH=" + os.Getenv("PATH")}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// createNamespace creates a namespace with a generated name, labelled to
// enforce the restricted Pod Security Standard as docs/helm.md says.
func createNamespace(ctx context.Context, prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: prefix + "-",
		Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted",
			"pod-security.kubernetes.io/warn":    "restricted",
		},
	}}
	Expect(applyClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// canI asks the API server whether serviceAccount (its user name,
// system:serviceaccount:NAMESPACE:NAME) may do verb on resource in the
// namespace target, or in every namespace when target is "".
func canI(ctx context.Context, serviceAccount, verb, resource, target string) bool {
	args := []string{"auth", "can-i", verb, resource, "--as", serviceAccount}
	if target == "" {
		args = append(args, "--all-namespaces")
	} else {
		args = append(args, "--namespace", target)
	}
	stdout, stderr, err := kubectl(ctx, "", args...)
	answer := strings.TrimSpace(stdout)
	Expect(answer).To(BeElementOf("yes", "no"), "kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	return answer == "yes"
}

var _ = DescribeTable("what the chart renders",
	func(ctx SpecContext, release string, namespaced bool) {
		ns := createNamespace(ctx, release)
		elsewhere := createNamespace(ctx, "elsewhere")
		var set, watched []string
		if namespaced {
			watched = []string{createNamespace(ctx, "team-a"), createNamespace(ctx, "team-b")}
			set = append(set, "watchNamespaces={"+strings.Join(watched, ",")+"}")
		}
		manifest := templateRelease(GinkgoT(), release, ns, set...)

		By("applying with no error and no warning, Pod Security's included")
		_, stderr, err := kubectl(ctx, manifest, "apply", "--server-side", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), "kubectl apply:\n%s", stderr)
		Expect(stderr).To(BeEmpty(), "warnings of kubectl apply")

		By("granting the manager's ServiceAccount what it needs, where it needs it")
		sa := "system:serviceaccount:" + ns + ":" + release + "-backend-operator"
		Expect(canI(ctx, sa, "create", "leases.coordination.k8s.io", ns)).To(BeTrue(), "leader election Lease in %s", ns)
		Expect(canI(ctx, sa, "create", "tokenreviews.authentication.k8s.io", "")).To(BeTrue(), "metrics authentication")
		for _, target := range append([]string{elsewhere}, watched...) {
			want := !namespaced || target != elsewhere
			for _, access := range [][2]string{
				{"get", "secrets"}, {"create", "configmaps"}, {"get", "pods"},
				{"watch", "httpbackends.backends.infrastate.io"}, {"patch", "statelocks.backends.infrastate.io/status"},
			} {
				Expect(canI(ctx, sa, access[0], access[1], target)).To(Equal(want), "%s %s in %s", access[0], access[1], target)
			}
		}
		Expect(canI(ctx, sa, "list", "secrets", "")).To(Equal(!namespaced), "list secrets cluster-wide")
	},
	Entry("with a ClusterRole", "cluster", false),
	Entry("with Roles in the watched namespaces", "namespaced", true),
)
