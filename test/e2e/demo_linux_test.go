package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/infrastate/backend-operator/internal/testenv"
)

// demoUp is how long the demo may take to say it is up: it builds four
// binaries (seconds once the build cache is warm), starts a control plane
// and applies a stack with Terraform.
const demoUp = 5 * time.Minute

// The demo's banner: its first line, and its last.
const (
	demoIsUp      = "run-local: the demo is up"
	demoBannerEnd = "Ctrl-C stops the manager"
)

// The local demo is run as a user runs it, `make run`'s script itself, with
// KUBECONFIG naming the suite's cluster (a cluster the user can reach): it
// must reach exactly the README tour's state on a control plane of its own,
// leave that cluster alone, and stop everything on Ctrl-C.
var _ = Describe("make run's local demo (hack/run-local.sh)", Ordered, func() {
	var (
		// demo is the script, in a process group of its own, as a
		// terminal's foreground job is.
		demo *process
		// runDir is its RUN_DIR, home its HOME.
		runDir, home string
		// dk is kubectl with the demo's kubeconfig.
		dk *kubectl
		// metricsAddress is where the demo's manager serves metrics.
		metricsAddress string
		// suiteObjects is what the suite's cluster held before the demo.
		suiteObjects []string
	)

	BeforeAll(func(ctx SpecContext) {
		state, err := url.Parse(sampleAddress)
		Expect(err).NotTo(HaveOccurred())
		expectAddressFree(ctx, state.Host, "the HttpBackend sample's state server address, where the demo's state server listens: "+
			"is a `make run` demo running? Stop it to run this spec")

		By("recording what the cluster of KUBECONFIG holds before the demo starts")
		suiteObjects = clusterObjects(ctx, kc)
		Expect(suiteObjects).To(ContainElement(HavePrefix("CustomResourceDefinition /httpbackends.backends.infrastate.io ")),
			"the suite's cluster has the CRDs: a demo that installed them there would change them")

		runDir, home = GinkgoT().TempDir(), GinkgoT().TempDir()
		metricsAddress = freeLoopbackAddress(ctx)
		cmd := exec.Command(filepath.Join(testenv.RepoRoot(), "hack", "run-local.sh"))
		cmd.Dir = testenv.RepoRoot()
		cmd.Env = append(demoEnv(ctx, home),
			"RUN_DIR="+runDir,
			"RUN_METRICS_ADDRESS="+metricsAddress,
			"KUBECONFIG="+kc.kubeconfig,
			"KUBECTL="+kc.path,
			"TERRAFORM="+terraformCLI.Path,
		)
		// A group of its own, which Ctrl-C signals as a whole (as a
		// terminal signals its foreground job); SIGTERM, which the script
		// handles by stopping everything, should the suite die first.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
		By("starting hack/run-local.sh with RUN_DIR " + runDir + " and KUBECONFIG naming the suite's cluster")
		demo = startCommand("make run", cmd)
		DeferCleanup(interruptDemo, demo)

		Eventually(func(g Gomega) {
			select {
			case <-demo.exited:
				StopTrying(fmt.Sprintf("the demo exited before it was up (%v)", demo.err)).Now()
			default:
			}
			g.Expect(demo.logs()).To(ContainSubstring(demoIsUp))
			g.Expect(demo.logs()).To(ContainSubstring(demoBannerEnd))
		}).WithTimeout(demoUp).WithPolling(time.Second).Should(Succeed())
		dk = &kubectl{path: kc.path, home: home, kubeconfig: filepath.Join(runDir, "kubeconfig")}
		Expect(demo.logs()).To(ContainSubstring("export KUBECONFIG=" + dk.kubeconfig))
	}, NodeTimeout(demoUp+time.Minute))

	It("is up in exactly the README tour's state", func(ctx SpecContext) {
		By("kubectl get infrastate: both backends Ready and unlocked, the RemoteState Ready with serial 1, serial 1 kept, no StateLock")
		rows := kubectlTables(dk.must(ctx, "default", "get", "infrastate"))
		Expect(rows).To(HaveKey("httpbackend.backends.infrastate.io/demo"))
		Expect(rows["httpbackend.backends.infrastate.io/demo"]).To(haveEntries(map[string]string{
			"READY": "True", "ADDRESS": sampleAddress + "/state/demo", "LOCKED": "False",
		}))
		Expect(rows).To(HaveKey("cosbackend.backends.infrastate.io/demo-cos"))
		Expect(rows["cosbackend.backends.infrastate.io/demo-cos"]).To(haveEntries(map[string]string{
			"READY": "True", "BUCKET": "tfstate-1250000000", "REGION": "ap-guangzhou", "LOCKED": "False",
		}))
		Expect(rows).To(HaveKey("remotestate.backends.infrastate.io/network"))
		Expect(rows["remotestate.backends.infrastate.io/network"]).To(haveEntries(map[string]string{
			"READY": "True", "BACKEND": "demo", "SERIAL": "1",
		}))
		Expect(rows).To(HaveKey("statehistory.backends.infrastate.io/demo-history"))
		Expect(rows["statehistory.backends.infrastate.io/demo-history"]).To(haveEntries(map[string]string{
			"READY": "True", "BACKEND": "demo", "SNAPSHOTS": "1", "NEWEST": "1",
		}))
		Expect(rows).To(HaveLen(4), "the demo holds the samples but the StateLock")

		By("what a runner pod mounts and gets as environment")
		Expect(dk.jsonpath(ctx, "default", "configmap/demo-backend", `{.data.backend\.tf}`)).
			To(MatchRegexp(`\baddress\s+= "` + regexp.QuoteMeta(sampleAddress+"/state/demo") + `"`))
		Expect(keysOf(dk.secretData(ctx, "default", "demo-backend-credentials"))).To(ConsistOf(
			"TF_HTTP_PASSWORD", "TF_HTTP_CLIENT_CERTIFICATE_PEM", "TF_HTTP_CLIENT_PRIVATE_KEY_PEM", "TF_HTTP_CLIENT_CA_CERTIFICATE_PEM"))

		By("the demo stack's outputs: plain ones in the ConfigMap network-outputs, DB_PASSWORD only in the Secret")
		Expect(dk.configMapData(ctx, "default", "network-outputs")).To(Equal(map[string]string{
			"VPC_ID":            "vpc-0a1b2c3d4e5f",
			"SUBNET_IDS":        `["subnet-0aa11","subnet-0bb22","subnet-0cc33"]`,
			"CIDR_BLOCKS":       `{"private":"10.0.1.0/24","public":"10.0.2.0/24"}`,
			"NAT_GATEWAY_COUNT": "2",
			"REGION":            "ap-guangzhou",
		}))
		Expect(dk.secretData(ctx, "default", "network-outputs")).To(Equal(map[string]string{"DB_PASSWORD": "demo-db-password"}))

		By("what the CosBackend found")
		Expect(dk.jsonpath(ctx, "default", "cosbackend/demo-cos", `{.status.conditions[?(@.type=="BucketReady")].message}`)).
			To(ContainSubstring("Bucket tfstate-1250000000 exists and can be read"))

		By("a bad patch refused by the API server, naming the field")
		r := dk.run(ctx, "default", "", "patch", "httpbackend", "demo", "--type=merge", "-p", `{"spec":{"retryWaitMin":60}}`)
		Expect(r.err).To(HaveOccurred())
		Expect(r.stderr).To(ContainSubstring(`The HttpBackend "demo" is invalid: spec.retryWaitMin`))

		By("a missing Secret stalling the backend, and the sample putting it back")
		dk.must(ctx, "default", "delete", "secret", "demo-state-password")
		Eventually(func() string {
			return dk.jsonpath(ctx, "default", "httpbackend/demo", `{.status.conditions[?(@.type=="Stalled")].reason}`)
		}).Should(Equal("SecretNotFound"))
		dk.must(ctx, "default", "apply", "-f", filepath.Join(testenv.RepoRoot(), "config", "samples", "backends_v1alpha1_httpbackend.yaml"))
		dk.must(ctx, "default", "wait", "--for=condition=Ready", "httpbackend/demo", "--timeout=60s")
	})

	It("holds the runner's terraform apply while the StateLock sample freezes the state, and lets it go on when it is deleted", func(ctx SpecContext) {
		runTerraform := filepath.Join(runDir, "runner", "run-terraform.sh")
		Expect(demo.logs()).To(ContainSubstring(runTerraform+" apply -auto-approve -lock-timeout="),
			"the banner shows the runner command the tour uses")
		terraform := func(ctx context.Context, args ...string) (string, error) {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, runTerraform, args...)
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, egress.env()...)
			out, err := cmd.CombinedOutput()
			GinkgoWriter.Printf("$ run-terraform.sh %s\n%s", strings.Join(args, " "), out)
			return string(out), err
		}

		By("freezing: kubectl apply -f config/samples/backends_v1alpha1_statelock.yaml")
		dk.must(ctx, "default", "apply", "-f", filepath.Join(testenv.RepoRoot(), "config", "samples", "backends_v1alpha1_statelock.yaml"))
		dk.must(ctx, "default", "wait", "--for=condition=Ready", "statelock/release-freeze", "--timeout=60s")
		lockID := dk.jsonpath(ctx, "default", "statelock/release-freeze", "{.status.lockID}")
		Expect(lockID).NotTo(BeEmpty())

		By("terraform apply with a short -lock-timeout failing on the freeze's lock")
		out, err := terraform(ctx, "apply", "-input=false", "-auto-approve", "-lock-timeout=2s")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("Error acquiring the state lock"))
		Expect(out).To(ContainSubstring(lockID))

		By("terraform apply with a long -lock-timeout waiting until the StateLock is deleted")
		type result struct {
			out string
			err error
		}
		done := make(chan result, 1)
		go func() {
			defer GinkgoRecover()
			out, err := terraform(ctx, "apply", "-input=false", "-auto-approve", "-lock-timeout=90s", "-var=nat_gateway_count=3")
			done <- result{out, err}
		}()
		Consistently(done, 3*time.Second).ShouldNot(Receive(), "terraform waits for the lock")
		dk.must(ctx, "default", "delete", "statelock", "release-freeze", "--timeout=60s")
		var res result
		Eventually(done, 2*time.Minute).Should(Receive(&res))
		Expect(res.err).NotTo(HaveOccurred(), res.out)
		Expect(res.out).To(ContainSubstring("Apply complete!"))
		Expect(res.out).To(ContainSubstring("nat_gateway_count = 3"))
	})

	It("keeps both serials of the demo state, and restores serial 1 as a new serial, as the tour does", func(ctx SpecContext) {
		By("kubectl get shist: serials 1 and 2 kept in the COS double's bucket")
		Eventually(func(g Gomega) {
			g.Expect(dk.jsonpath(ctx, "default", "statehistory/demo-history", "{.status.snapshots[*].serial}")).To(Equal("2 1"))
		}).WithTimeout(2 * time.Minute).Should(Succeed())

		By("a StateRestore of serial 1")
		dk.apply(ctx, "default", `apiVersion: backends.infrastate.io/v1alpha1
kind: StateRestore
metadata:
  name: demo-to-1
spec:
  historyRef:
    name: demo-history
  serial: 1
`)
		dk.must(ctx, "default", "wait", "--for=condition=Ready", "staterestore/demo-to-1", "--timeout=60s")
		Expect(dk.jsonpath(ctx, "default", "staterestore/demo-to-1", "{.status.writtenSerial}")).To(Equal("3"))

		By("the RemoteState publishing serial 1's outputs again, from serial 3")
		Eventually(func(g Gomega) {
			g.Expect(dk.configMapData(ctx, "default", "network-outputs")).To(HaveKeyWithValue("NAT_GATEWAY_COUNT", "2"))
			g.Expect(dk.jsonpath(ctx, "default", "remotestate/network", "{.status.state.serial}")).To(Equal("3"))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
	})

	It("serves the manager's metrics to the ServiceAccount bound to metrics-reader, with the command its banner prints", func(ctx SpecContext) {
		Expect(scrapeStatus(ctx, metricsAddress, "")).To(Equal(http.StatusUnauthorized), "a scrape without a token is refused")

		command := regexp.MustCompile(`(?m)^ {2}(\S+ get --raw /metrics .*)$`).FindStringSubmatch(demo.logs())
		Expect(command).NotTo(BeNil(), "the banner shows how to scrape the metrics")
		Expect(command[1]).To(ContainSubstring("--server=https://" + metricsAddress + " "))
		scrapeCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		scrape := exec.CommandContext(scrapeCtx, "bash", "-c", command[1])
		scrape.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "KUBECONFIG=" + dk.kubeconfig}
		out, err := scrape.Output()
		if exitErr, ok := errors.AsType[*exec.ExitError](err); ok {
			GinkgoWriter.Printf("%s\n", exitErr.Stderr)
		}
		Expect(err).NotTo(HaveOccurred(), "the banner's scrape command")
		Expect(string(out)).To(MatchRegexp(`(?m)^infrastate_backend_reachable\{kind="HttpBackend",name="demo",namespace="default"\} 1$`))
		Expect(string(out)).To(MatchRegexp(`(?m)^infrastate_remotestate_last_success_timestamp_seconds\{name="network",namespace="default"\} `))
	})

	It("changes the cluster of KUBECONFIG in cluster mode only, after naming it", func(ctx SpecContext) {
		By("RUN_MODE=cluster (make run-cluster) with KUBECONFIG naming the demo's cluster, the manager only printing its flags")
		demoConfig, err := clientcmd.LoadFromFile(dk.kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		kubeContext := demoConfig.CurrentContext
		server := demoConfig.Clusters[demoConfig.Contexts[kubeContext].Cluster].Server
		runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(runCtx, filepath.Join(testenv.RepoRoot(), "hack", "run-local.sh"), "--help")
		cmd.Dir = testenv.RepoRoot()
		cmd.Env = append(demoEnv(ctx, home), "RUN_MODE=cluster", "KUBECONFIG="+dk.kubeconfig, "KUBECTL="+kc.path)
		combined, _ := cmd.CombinedOutput()
		out := string(combined)
		GinkgoWriter.Printf("$ RUN_MODE=cluster hack/run-local.sh --help\n%s", out)
		named := strings.Index(out, "the cluster of context "+kubeContext+" ("+server+")")
		installed := strings.Index(out, "customresourcedefinition.apiextensions.k8s.io/httpbackends.backends.infrastate.io serverside-applied")
		Expect(named).To(BeNumerically(">=", 0), "cluster mode names the context and the server it changes")
		Expect(installed).To(BeNumerically(">", named), "cluster mode installs the CRDs after naming the cluster")
		Expect(out).To(ContainSubstring("metrics-bind-address"), "cluster mode runs the manager")
	})

	It("leaves the cluster of KUBECONFIG alone, running on a control plane of its own", func(ctx SpecContext) {
		demoConfig, err := clientcmd.LoadFromFile(dk.kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		for _, cluster := range demoConfig.Clusters {
			Expect(cluster.Server).NotTo(Equal(cfg.Host), "the demo's kubeconfig names the suite's API server")
		}
		Expect(changedLines(suiteObjects, clusterObjects(ctx, kc))).To(BeEmpty(), "the demo changed the cluster of KUBECONFIG")
	})

	It("stops everything it started on Ctrl-C, and never shows a secret", func(ctx SpecContext) {
		processes := descendants(demo.cmd.Process.Pid)
		DeferCleanup(killLeftovers, processes)
		names := make([]string, 0, len(processes))
		for _, p := range processes {
			names = append(names, p.name)
		}
		Expect(names).To(ContainElements("localcluster", "etcd", "kube-apiserver", "stateserver", "cosdouble", "manager"))

		demoConfig, err := clientcmd.LoadFromFile(dk.kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		apiServer, err := url.Parse(demoConfig.Clusters[demoConfig.Contexts[demoConfig.CurrentContext].Cluster].Server)
		Expect(err).NotTo(HaveOccurred())
		cos := regexp.MustCompile(`COS double\s+http://(127\.0\.0\.1:\d+)`).FindStringSubmatch(demo.logs())
		Expect(cos).NotTo(BeNil(), "the banner names the COS double's address")
		state, err := url.Parse(sampleAddress)
		Expect(err).NotTo(HaveOccurred())
		ports := []string{state.Host, metricsAddress, cos[1], apiServer.Host}
		for _, address := range ports {
			Expect(listening(ctx, address)).To(BeTrue(), "nothing listens on %s while the demo runs", address)
		}

		By("Ctrl-C: SIGINT to the demo's process group")
		Expect(ignoresSIGINT(demo.cmd.Process.Pid)).To(BeFalse(),
			"the demo was started with SIGINT ignored (as the suite's own process was), so no Ctrl-C could reach it")
		Expect(syscall.Kill(-demo.cmd.Process.Pid, syscall.SIGINT)).To(Succeed())
		Eventually(demo.exited).WithTimeout(2 * time.Minute).Should(BeClosed())
		var exitErr *exec.ExitError
		Expect(errors.As(demo.err, &exitErr)).To(BeTrue(), "the demo exits with the status of an interrupt: %v", demo.err)
		Expect(exitErr.ExitCode()).To(Equal(130))
		Expect(demo.logs()).To(ContainSubstring("run-local: stopped"))
		for _, p := range processes {
			Expect(p.running()).To(BeFalse(), "%s (pid %d) still runs after Ctrl-C", p.name, p.pid)
		}
		for _, address := range ports {
			Expect(listening(ctx, address)).To(BeFalse(), "something still listens on %s after Ctrl-C", address)
		}

		By("no password or key in the demo's terminal output or its Terraform log")
		clientKey, err := os.ReadFile(filepath.Join(runDir, "pki", "client.key"))
		Expect(err).NotTo(HaveOccurred())
		terraformLog, err := os.ReadFile(filepath.Join(runDir, "logs", "terraform.log"))
		Expect(err).NotTo(HaveOccurred())
		secrets := []string{"demo-password-change-me", "example-secret-key", "demo-db-password", keyBody(clientKey)}
		for _, text := range []string{demo.logs(), string(terraformLog)} {
			for _, secret := range secrets {
				Expect(text).NotTo(ContainSubstring(secret))
			}
		}
	})
})
