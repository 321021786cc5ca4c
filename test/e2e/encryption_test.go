package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

var _ = Describe("OpenTofu state encryption", func() {
	It("encrypts with only the rendered objects, and a RemoteState publishes what tofu output shows", func(ctx SpecContext) {
		const (
			password   = "encrypt-Me-1"
			passphrase = "a passphrase of more than 16 bytes"
		)
		ns := newNamespace(ctx, "encrypt")
		mgr := startManager(ns)
		DeferCleanup(mgr.stop)
		dataDir := GinkgoT().TempDir()
		server := startStateServer(stateServerOptions{dataDir: dataDir, username: "tofu", password: password, tls: true})
		DeferCleanup(func() { server.stop() })

		By("applying a backend with spec.encryption, and a RemoteState of it")
		kc.must(ctx, ns, "create", "secret", "generic", "state-password", "--from-literal=password="+password)
		kc.must(ctx, ns, "create", "secret", "generic", "tofu-passphrase", "--from-literal=passphrase="+passphrase)
		kc.must(ctx, ns, "create", "configmap", "state-ca", "--from-file=ca.crt="+pkiFiles.CACert)
		backend := makeBackend("encrypted", server.stateURL("encrypted")).Locks().
			BasicAuth("tofu", "state-password", "").CAFromConfigMap("state-ca").
			Runner(backendsv1alpha1.RunnerOpenTofu, "").Encryption("tofu-passphrase").Obj()
		remote := builders.MakeRemoteState("network", "", backendsv1alpha1.HttpBackendKind, "encrypted").ProbeInterval(10 * time.Second).Obj()
		kc.apply(ctx, ns, manifestOf(backend, remote))
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "httpbackend/encrypted", "--timeout=60s")
		Expect(kc.configMapData(ctx, ns, "encrypted-backend")).NotTo(ContainElement(ContainSubstring(passphrase)))

		By("tofu init and apply with the rendered ConfigMap and credentials Secret only")
		tofu := newRunnerWith(ctx, tofuCLI, GinkgoT().TempDir(), ns, "encrypted-backend", "encrypted-backend-credentials", backendTF)
		Expect(tofu.credentials).To(HaveKey("TF_ENCRYPTION"))
		tofu.init(ctx)
		tofu.apply(ctx)
		outputs := tofu.outputs(ctx)
		Expect(outputs).To(HaveLen(5))

		By("the stored state holds no output in clear text")
		stored, err := filepath.Glob(filepath.Join(dataDir, "*.tfstate"))
		Expect(err).NotTo(HaveOccurred())
		Expect(stored).To(HaveLen(1))
		data, err := os.ReadFile(stored[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(ContainSubstring(`"encrypted_data"`))
		for name, out := range outputs {
			for _, part := range strings.FieldsFunc(rawOrCompact(out.Value), func(r rune) bool { return strings.ContainsRune(`[]{}",:`, r) }) {
				if len(part) >= 4 {
					Expect(string(data)).NotTo(ContainSubstring(part), "output %s is in clear text in the stored state", name)
				}
			}
		}

		By("the backend reports the state encrypted, and decrypts it for its outputs")
		Eventually(func(g Gomega) {
			g.Expect(kc.jsonpath(ctx, ns, "httpbackend/encrypted", "{.status.state.encrypted}")).To(Equal("true"))
			g.Expect(kc.jsonpath(ctx, ns, "httpbackend/encrypted", "{.status.state.outputCount}")).To(Equal("5"))
		}).WithTimeout(probeTimeout).Should(Succeed())

		By("the RemoteState publishes what tofu output -json shows, sensitive outputs only in its Secret")
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "remotestate/network", "--timeout="+probeTimeout.String())
		plain := kc.configMapData(ctx, ns, "network-outputs")
		sensitive := kc.secretData(ctx, ns, "network-outputs")
		for name, out := range outputs {
			if out.Sensitive {
				Expect(sensitive).To(HaveKeyWithValue(name, rawOrCompact(out.Value)))
				Expect(plain).NotTo(HaveKey(name))
			} else {
				Expect(plain).To(HaveKeyWithValue(name, rawOrCompact(out.Value)))
				Expect(sensitive).NotTo(HaveKey(name))
			}
		}
		Expect(kc.must(ctx, ns, "get", "httpbackend,remotestate", "-o", "yaml")).NotTo(ContainSubstring(passphrase))
	})
})
