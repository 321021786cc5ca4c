package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/infrastate/backend-operator/internal/testenv"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// sampleAddress is the state server address the HttpBackend sample uses;
// `make run` starts the state server there.
const sampleAddress = "https://127.0.0.1:18443"

// writeSamples copies config/samples/*.yaml (without kustomization.yaml)
// into a new directory, pointing them at this suite's state server and
// shortening the probe and refresh intervals to the 10s minimum. It fails
// when a sample no longer has what it rewrites, so the samples and this
// test cannot drift apart silently.
func writeSamples(serverURL string) string {
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "config", "samples", "*.yaml"))
	Expect(err).NotTo(HaveOccurred())
	dir := GinkgoT().TempDir()
	var rewritten string
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		text := strings.ReplaceAll(string(data), sampleAddress, serverURL)
		text = strings.ReplaceAll(text, "interval: 1m", "interval: 10s")
		rewritten += text
		Expect(os.WriteFile(filepath.Join(dir, filepath.Base(f)), []byte(text), 0o600)).To(Succeed())
	}
	Expect(rewritten).To(ContainSubstring(serverURL+"/state/demo"), "the HttpBackend sample no longer uses %s", sampleAddress)
	Expect(strings.Count(rewritten, "interval: 10s")).To(BeNumerically(">=", 2), "the HttpBackend and RemoteState samples no longer refresh every 1m")
	return dir
}

var _ = Describe("The samples", Ordered, func() {
	var (
		ns       string
		samples  string
		server   *stateServerProcess
		password string
		tf       *runner
		work     string
	)

	BeforeAll(func(ctx SpecContext) {
		ns = newNamespace(ctx, "samples")
		work = GinkgoT().TempDir()
		probe := writeSamples("https://127.0.0.1:1")

		By("starting a COS double with the CosBackend sample's bucket and credentials, as make run does")
		bucket := sampleField(probe, "CosBackend", "demo-cos", "spec", "bucket")
		secretID := sampleField(probe, "Secret", "demo-cos-credentials", "stringData", "secretId")
		secretKey := sampleField(probe, "Secret", "demo-cos-credentials", "stringData", "secretKey")
		Expect([]string{bucket, secretID, secretKey}).NotTo(ContainElement(BeEmpty()))
		cosDouble := startCosDouble(secretID, secretKey, bucket)
		DeferCleanup(cosDouble.stop)

		mgr := startManager(ns, "--cos-service-url="+cosDouble.url)
		DeferCleanup(mgr.stop)

		By("starting a state server with the samples' credentials, as make run does")
		username := sampleField(probe, "HttpBackend", "demo", "spec", "username")
		password = sampleField(probe, "Secret", "demo-state-password", "stringData", "password")
		Expect(username).NotTo(BeEmpty())
		Expect(password).NotTo(BeEmpty())
		server = startStateServer(stateServerOptions{
			dataDir: GinkgoT().TempDir(), username: username, password: password, tls: true, clientCA: true,
		})
		DeferCleanup(server.stop)
		samples = writeSamples(server.url)
	})

	It("become Ready with kubectl apply, the CosBackend against the COS double", func(ctx SpecContext) {
		By("creating the client certificate Secret and the CA ConfigMap, as make run does")
		createStateServerSecrets(ctx, ns, "")

		By("applying config/samples")
		out := kc.must(ctx, ns, "apply", "-f", samples)
		Expect(out).To(ContainSubstring("httpbackend.backends.infrastate.io/demo created"))
		Expect(out).To(ContainSubstring("cosbackend.backends.infrastate.io/demo-cos created"))
		Expect(out).To(ContainSubstring("remotestate.backends.infrastate.io/network created"))
		Expect(out).To(ContainSubstring("statelock.backends.infrastate.io/release-freeze created"))

		kc.must(ctx, ns, "wait", "--for=condition=Ready", "httpbackend/demo", "--timeout=60s")
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "cosbackend/demo-cos", "--timeout=60s")
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "statelock/release-freeze", "--timeout=60s")
		status, reason, message := kc.condition(ctx, ns, "cosbackend/demo-cos", "BucketReady")
		Expect(status).To(Equal("True"))
		Expect(reason).To(Equal("Reachable"))
		Expect(message).To(ContainSubstring("Bucket tfstate-1250000000 exists and can be read"))
		Eventually(func(g Gomega) {
			status, reason, message := kc.condition(ctx, ns, "remotestate/network", "OutputsReady")
			g.Expect(status).To(Equal("False"))
			g.Expect(reason).To(Equal("StateNotFound"))
			g.Expect(message).To(ContainSubstring("holds no state"))
		}).Should(Succeed())

		table := kc.must(ctx, ns, "get", "infrastate")
		Expect(table).To(MatchRegexp(`httpbackend\.backends\.infrastate\.io/demo\s+True\s+` + server.url))
		Expect(table).To(MatchRegexp(`cosbackend\.backends\.infrastate\.io/demo-cos\s+True\s+tfstate-1250000000\s+ap-guangzhou\s+False`))
		Expect(table).To(MatchRegexp(`remotestate\.backends\.infrastate\.io/network\s+False\s+demo`))
		Expect(table).To(MatchRegexp(`statelock\.backends\.infrastate\.io/release-freeze\s+True\s+demo\s+\S+\s+LockAcquired`))
	})

	It("renders a backend that the real terraform init and apply use", func(ctx SpecContext) {
		rendered := kc.jsonpath(ctx, ns, "httpbackend/demo", "{.status.rendered.configMapName} {.status.rendered.secretName}")
		Expect(rendered).To(Equal("demo-backend demo-backend-credentials"))

		tf = newRunner(ctx, work, ns, "demo-backend", "demo-backend-credentials")
		Expect(tf.credentials).To(HaveKeyWithValue("TF_HTTP_PASSWORD", password))
		Expect(tf.credentials).To(HaveKeyWithValue("TF_HTTP_CLIENT_CERTIFICATE_PEM", string(pki.ClientCert)))
		Expect(tf.credentials).To(HaveKeyWithValue("TF_HTTP_CLIENT_PRIVATE_KEY_PEM", string(pki.ClientKey)))
		Expect(tf.credentials).To(HaveKeyWithValue("TF_HTTP_CLIENT_CA_CERTIFICATE_PEM", string(pki.CACert)))
		tf.init(ctx)

		By("meeting the sample StateLock's change freeze")
		lockID := kc.jsonpath(ctx, ns, "statelock/release-freeze", "{.status.lockID}")
		Expect(lockID).NotTo(BeEmpty())
		out, err := tf.run(ctx, "apply", "-auto-approve", "-input=false", "-lock-timeout=1s")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("Error acquiring the state lock"))
		Expect(out).To(ContainSubstring(lockID))

		By("lifting the freeze: deleting the StateLock releases its lock")
		kc.must(ctx, ns, "delete", "statelock", "release-freeze", "--timeout=60s")
		tf.apply(ctx)

		outputs := tf.outputs(ctx)
		Expect(outputs).To(HaveKey("vpc_id"))
		Expect(outputs["db_password"].Sensitive).To(BeTrue())
	})

	It("renders backend.tf, backend.tf.json and backend.tfbackend that terraform and tofu use to reach the same state", func(ctx SpecContext) {
		want := tf.outputs(ctx)
		for _, cli := range []testtools.Runner{terraformCLI, tofuCLI} {
			for _, file := range []backendFile{backendTF, backendTFJSON, backendTFBackend} {
				if cli == terraformCLI && file == backendTF {
					continue // tf itself
				}
				By(cli.Name + " init with " + string(file))
				other := newRunnerWith(ctx, cli, work, ns, "demo-backend", "demo-backend-credentials", file)
				other.init(ctx)
				Expect(other.outputs(ctx)).To(Equal(want))
			}
		}
	})

	It("shows the new serial in the HttpBackend status", func(ctx SpecContext) {
		By("applying a change, so the serial moves again")
		tf.apply(ctx, "-var=nat_gateway_count=3")
		serial := tf.serial(ctx)
		Expect(serial).To(BeNumerically(">=", 2))
		Eventually(func(g Gomega) {
			g.Expect(kc.jsonpath(ctx, ns, "httpbackend/demo", "{.status.state.serial}")).To(Equal(strconv.FormatInt(serial, 10)))
		}).WithTimeout(probeTimeout).Should(Succeed())
		wide := kc.must(ctx, ns, "get", "httpbackend", "demo", "-o", "wide")
		Expect(wide).To(MatchRegexp(`demo\s+True\s+\S+\s+` + strconv.FormatInt(serial, 10) + `\s+False`))
	})

	It("publishes the outputs to the RemoteState's ConfigMap and Secret", func(ctx SpecContext) {
		outputs := tf.outputs(ctx)
		serial := strconv.FormatInt(tf.serial(ctx), 10)
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "remotestate/network", "--timeout="+probeTimeout.String())
		Eventually(func(g Gomega) {
			g.Expect(kc.jsonpath(ctx, ns, "remotestate/network", "{.status.state.serial}")).To(Equal(serial))
		}).WithTimeout(probeTimeout).Should(Succeed())

		plain := kc.configMapData(ctx, ns, "network-outputs")
		sensitive := kc.secretData(ctx, ns, "network-outputs")
		Expect(plain).To(Equal(map[string]string{
			"VPC_ID":            rawOrCompact(outputs["vpc_id"].Value),
			"SUBNET_IDS":        rawOrCompact(outputs["subnet_ids"].Value),
			"CIDR_BLOCKS":       rawOrCompact(outputs["cidr_blocks"].Value),
			"NAT_GATEWAY_COUNT": rawOrCompact(outputs["nat_gateway_count"].Value),
			"REGION":            "ap-guangzhou", // from spec.defaults: the stack has no region output
		}))
		Expect(plain["VPC_ID"]).To(Equal("vpc-0a1b2c3d4e5f"))
		Expect(plain["NAT_GATEWAY_COUNT"]).To(Equal("3"))
		Expect(plain["SUBNET_IDS"]).To(Equal(`["subnet-0aa11","subnet-0bb22","subnet-0cc33"]`))
		Expect(plain["CIDR_BLOCKS"]).To(MatchJSON(`{"private":"10.0.1.0/24","public":"10.0.2.0/24"}`))
		Expect(sensitive).To(Equal(map[string]string{"DB_PASSWORD": rawOrCompact(outputs["db_password"].Value)}))

		var status struct {
			Status struct {
				Outputs []struct {
					Name      string `json:"name"`
					Key       string `json:"key"`
					Sensitive bool   `json:"sensitive"`
				} `json:"outputs"`
			} `json:"status"`
		}
		kc.getJSON(ctx, ns, "remotestate/network", &status)
		Expect(status.Status.Outputs).To(ContainElement(And(
			HaveField("Name", "db_password"), HaveField("Key", "DB_PASSWORD"), HaveField("Sensitive", true))))
		Expect(kc.must(ctx, ns, "get", "remotestate", "network", "-o", "yaml")).NotTo(ContainSubstring("demo-db-password"),
			"the RemoteState status must never carry a value")
	})
})

// rawOrCompact is how the operator publishes an output value: a string
// raw, anything else as compact JSON.
func rawOrCompact(value json.RawMessage) string {
	var s string
	if err := json.Unmarshal(value, &s); err == nil {
		return s
	}
	var v any
	Expect(json.Unmarshal(value, &v)).To(Succeed())
	data, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return string(data)
}

// sampleField reads a string field of the object of kind and name in the
// sample files of dir.
func sampleField(dir, kind, name string, path ...string) string {
	for _, doc := range readDocuments(dir) {
		if doc.GetKind() != kind || doc.GetName() != name {
			continue
		}
		value, _, err := unstructured.NestedString(doc.Object, path...)
		Expect(err).NotTo(HaveOccurred())
		return value
	}
	return ""
}
