// Package e2e drives the operator end to end, as a user would: the manager
// and the reference state server run as the binaries `go build` makes of
// cmd/manager and cmd/stateserver, against a real kube-apiserver and etcd
// (envtest), and everything is done through the real kubectl and Terraform
// CLIs built by hack/install-tools.sh. The suite fails, never skips, when
// KUBEBUILDER_ASSETS, KUBECTL or TERRAFORM is missing: `make test` sets
// them.
package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/infrastate/backend-operator/internal/devpki"
	"github.com/infrastate/backend-operator/internal/testenv"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// Shared timeouts of the suite. A probe interval is at least 10s (with up to
// 10% jitter), so waits for a periodic probe use probeTimeout.
const (
	timeout      = 60 * time.Second
	probeTimeout = 45 * time.Second
	interval     = 250 * time.Millisecond
)

// Credentials of the suite's state server.
const (
	stateUser     = "runner"
	statePassword = "e2e-Passw0rd-one"
)

var (
	testEnv   *envtest.Environment
	cfg       *rest.Config
	k8sClient client.Client

	// bin holds the binaries built for the suite.
	bin struct{ manager, stateserver, cosdouble string }
	// kc runs kubectl with the suite's admin kubeconfig.
	kc *kubectl
	// managerID is the identity the specs' managers run as: a
	// ServiceAccount bound to exactly the RBAC the chart ships (or, with
	// E2E_MANAGER_RBAC=kustomize, config/default). otherManagerID is the
	// other install's, applied beside it.
	managerID, otherManagerID managerIdentity
	// terraformCLI and tofuCLI are the Terraform and OpenTofu CLIs.
	terraformCLI, tofuCLI testtools.Runner
	// pki is the CA, server and client certificates of the state servers.
	pki      *devpki.PKI
	pkiFiles devpki.Files
	// stateServer serves HTTPS with basic auth and requires client
	// certificates (mutual TLS); specs that need another setup start
	// their own.
	stateServer *stateServerProcess
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(timeout)
	SetDefaultEventuallyPollingInterval(interval)
	RunSpecs(t, "End to end suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	runners := testtools.Runners(GinkgoT())
	terraformCLI, tofuCLI = runners[0], runners[1]
	kubectlPath := testtools.Kubectl(GinkgoT())
	var err error
	testEnv, err = testenv.New()
	Expect(err).NotTo(HaveOccurred())

	dir, err := os.MkdirTemp("", "backend-operator-e2e-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)

	By("building the manager, the state server and the COS double")
	buildBinaries(ctx, filepath.Join(dir, "bin"))

	egress = startEgressRecorder()
	DeferCleanup(func() {
		expectNoEgress()
		egress.close()
	})

	By("starting kube-apiserver and etcd with the CRDs")
	// As OpenShift and other hardened clusters do: an owner reference that
	// blocks its owner's deletion needs the right to update the owner's
	// finalizers, so that the RBAC the manager ships is proved to hold it.
	testEnv.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(testEnv.Stop()).To(Succeed()) })
	k8sClient, err = client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	admin, err := testEnv.AddUser(envtest.User{Name: "e2e-admin", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := admin.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	kc = newKubectl(kubectlPath, dir, kubeconfig)

	By("giving the manager the ServiceAccounts and RBAC of the chart and of config/default")
	managerID, otherManagerID = suiteIdentity(ctx, dir)
	GinkgoWriter.Printf("The managers run with the RBAC of %s\n", managerID.source)

	By("starting the state server with basic auth and mutual TLS")
	pki, err = devpki.New("terraform-runner", 24*time.Hour)
	Expect(err).NotTo(HaveOccurred())
	pkiFiles, err = pki.WriteFiles(filepath.Join(dir, "pki"))
	Expect(err).NotTo(HaveOccurred())
	stateServer = startStateServer(stateServerOptions{
		dataDir:  filepath.Join(dir, "states"),
		username: stateUser, password: statePassword,
		tls: true, clientCA: true,
	})
	DeferCleanup(stateServer.stop)
}, NodeTimeout(10*time.Minute))

// buildBinaries builds cmd/manager, cmd/stateserver and hack/cosdouble
// into dir.
func buildBinaries(ctx context.Context, dir string) {
	// go test puts the go command of the running toolchain first in PATH.
	goBin, err := exec.LookPath("go")
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", dir+string(filepath.Separator), "./cmd/manager", "./cmd/stateserver", "./hack/cosdouble")
	cmd.Dir = testenv.RepoRoot()
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build:\n%s", out)
	bin.manager = filepath.Join(dir, "manager")
	bin.stateserver = filepath.Join(dir, "stateserver")
	bin.cosdouble = filepath.Join(dir, "cosdouble")
}

// newNamespace gives the current spec (or ordered container) a namespace
// of its own: envtest has no namespace controller, so namespaces are never
// really deleted and names are never reused.
func newNamespace(ctx context.Context, prefix string) string {
	ns, err := testenv.CreateNamespace(ctx, k8sClient, "e2e-"+prefix)
	Expect(err).NotTo(HaveOccurred())
	return ns
}
