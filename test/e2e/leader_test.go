package e2e

import (
	"regexp"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// leaseAcquired is the log line of a manager elected leader.
var leaseAcquired = regexp.MustCompile(`(?i)"msg":"successfully acquired lease"`)

// leaseAwaited is the log line of a manager that waits to be elected.
var leaseAwaited = regexp.MustCompile(`(?i)"msg":"attempting to acquire leader lease`)

var _ = Describe("Leader election", func() {
	It("runs one manager at a time with the shipped RBAC, and hands over when the leader stops", func(ctx SpecContext) {
		ns := newNamespace(ctx, "leader")
		createStateServerSecrets(ctx, ns, statePassword)
		kc.apply(ctx, ns, manifestOf(suiteBackend("app", ns+"-app").Obj()))
		// A Lease of the spec's own, in the namespace the installs grant it.
		lease := "lease/" + ns
		election := []string{"--leader-elect", "--leader-election-namespace=" + deployNamespace, "--leader-election-id=" + ns}
		holder := func() string { return kc.jsonpath(ctx, deployNamespace, lease, "{.spec.holderIdentity}") }

		By("the first manager is elected and reconciles")
		first := startManagerAs(managerID, ns, nil, election...)
		DeferCleanup(first.stop)
		Expect(first.logs()).To(MatchRegexp(leaseAcquired.String()))
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "httpbackend/app", "--timeout=60s")
		leader := holder()
		Expect(leader).NotTo(BeEmpty())

		By("the second waits for the Lease, and does not reconcile")
		second := launchManagerAs(managerID, ns, nil, election...)
		DeferCleanup(second.stop)
		second.waitForLog(leaseAwaited)
		Consistently(func(g Gomega) {
			g.Expect(second.logs()).NotTo(MatchRegexp(workersStarted.String()))
			g.Expect(holder()).To(Equal(leader))
		}).WithTimeout(5 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("the leader stops and releases the Lease: the second takes it within seconds")
		first.stop()
		second.waitForLog(workersStarted)
		Expect(second.logs()).To(MatchRegexp(leaseAcquired.String()))
		Expect(holder()).NotTo(BeElementOf("", leader))

		By("the new leader reconciles: a renamed ConfigMap replaces the one the old leader rendered")
		kc.must(ctx, ns, "patch", "httpbackend", "app", "--type=merge", "-p", `{"spec":{"configMapName":"app-terraform"}}`)
		Eventually(func(g Gomega) {
			g.Expect(kc.run(ctx, ns, "", "get", "configmap", "app-terraform").err).NotTo(HaveOccurred())
			g.Expect(kc.run(ctx, ns, "", "get", "configmap", "app-backend").stderr).To(ContainSubstring("NotFound"))
		}).Should(Succeed())

		By("leader election recorded its Events beside its Lease")
		Expect(kc.must(ctx, deployNamespace, "get", "events", "--field-selector", "reason=LeaderElection,involvedObject.name="+ns,
			"-o", "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}")).To(ContainSubstring("became leader"))
	})
})
