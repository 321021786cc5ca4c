package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("A password rotation", func() {
	It("reaches the credentials Secret, and the backend recovers once the server has the new password", func(ctx SpecContext) {
		const oldPassword, newPassword = "rotate-me-Old-1", "rotated-New-2"
		ns := newNamespace(ctx, "rotate")
		mgr := startManager(ns)
		DeferCleanup(mgr.stop)

		By("a state server of its own: HTTPS with basic auth, no client certificates")
		server := startStateServer(stateServerOptions{
			dataDir: GinkgoT().TempDir(), username: "rotator", password: oldPassword, tls: true,
		})
		DeferCleanup(func() { server.stop() })
		kc.must(ctx, ns, "create", "secret", "generic", "state-password", "--from-literal=password="+oldPassword)
		kc.must(ctx, ns, "create", "configmap", "state-ca", "--from-file=ca.crt="+pkiFiles.CACert)
		kc.apply(ctx, ns, manifestOf(makeBackend("rotating", server.stateURL("rotating")).
			BasicAuth("rotator", "state-password", "").CAFromConfigMap("state-ca").Obj()))
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "httpbackend/rotating", "--timeout=60s")
		Expect(kc.secretData(ctx, ns, "rotating-backend-credentials")).To(HaveKeyWithValue("TF_HTTP_PASSWORD", oldPassword))

		By("rotating the Secret with kubectl apply")
		rotated := kc.must(ctx, ns, "create", "secret", "generic", "state-password",
			"--from-literal=password="+newPassword, "--dry-run=client", "-o", "yaml")
		kc.apply(ctx, ns, rotated)
		Eventually(func(g Gomega) {
			g.Expect(kc.secretData(ctx, ns, "rotating-backend-credentials")).To(HaveKeyWithValue("TF_HTTP_PASSWORD", newPassword))
		}).Should(Succeed())

		By("new credentials are probed at once: the server still wants the old password")
		Eventually(func(g Gomega) {
			status, reason, _ := kc.condition(ctx, ns, "httpbackend/rotating", "StateReachable")
			g.Expect(status).To(Equal("False"))
			g.Expect(reason).To(Equal("Forbidden"))
		}).Should(Succeed())
		_, reason, message := kc.condition(ctx, ns, "httpbackend/rotating", "Ready")
		Expect(reason).To(Equal("Forbidden"))
		Expect(message).NotTo(ContainSubstring(newPassword))
		Expect(message).NotTo(ContainSubstring(oldPassword))

		By("restarting the server with the new password: the next probe succeeds")
		server = server.restart(newPassword)
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "httpbackend/rotating", "--timeout="+probeTimeout.String())
		_, reason, _ = kc.condition(ctx, ns, "httpbackend/rotating", "StateReachable")
		Expect(reason).To(Equal("Reachable"))

		By("a runner with the rotated credentials writes state")
		tf := newRunner(ctx, GinkgoT().TempDir(), ns, "rotating-backend", "rotating-backend-credentials")
		tf.init(ctx)
		tf.apply(ctx)
	})
})
