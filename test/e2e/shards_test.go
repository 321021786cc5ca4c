package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// shardManagerArgs are the flags of a manager of the shard selector,
// elected on a Lease of its own, serving plain metrics at address.
func shardManagerArgs(selector, lease, metricsAddress string) []string {
	return []string{
		"--watch-label-selector=" + selector,
		"--leader-elect", "--leader-election-namespace=" + deployNamespace, "--leader-election-id=" + lease,
		"--metrics-bind-address", metricsAddress, "--metrics-secure=false",
	}
}

// plainScrape reads a manager's metrics served over plain HTTP.
func plainScrape(ctx context.Context, g Gomega, address string) map[string]*dto.MetricFamily {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+"/metrics", http.NoBody)
	g.Expect(err).NotTo(HaveOccurred())
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	text := expfmt.NewTextParser(model.UTF8Validation)
	families, err := text.TextToMetricFamilies(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return families
}

// appLockHeld is the value of infrastate_backend_lock_held of the
// HttpBackend app of namespace that the manager at address serves, nil
// when it serves none: only the manager of the backend's shard does.
func appLockHeld(ctx context.Context, g Gomega, address, namespace string) *float64 {
	return seriesValue(plainScrape(ctx, g, address), "infrastate_backend_lock_held",
		map[string]string{"kind": backendsv1alpha1.HttpBackendKind, "namespace": namespace, "name": "app"})
}

// resourceVersions are the resourceVersions of the objects of namespace.
func resourceVersions(ctx context.Context, namespace string, kindNames ...string) map[string]string {
	versions := map[string]string{}
	for _, kindName := range kindNames {
		versions[kindName] = kc.jsonpath(ctx, namespace, kindName, "{.metadata.resourceVersion}")
	}
	return versions
}

var _ = Describe("Shards by label", func() {
	It("run one manager per shard, each on its own Lease and its own objects; a move keeps the lock, writes nothing, and a reference across shards is reported", func(ctx SpecContext) {
		ns := newNamespace(ctx, "shards")
		createStateServerSecrets(ctx, ns, statePassword)
		shardA, mainShard := freeLoopbackAddress(ctx), freeLoopbackAddress(ctx)

		By("starting the manager of shard a and the main one, each elected on a Lease of its own")
		a := startManagerAs(managerID, ns, nil, shardManagerArgs(controllers.ShardLabel+" in (a)", ns+"-a", shardA)...)
		DeferCleanup(a.stop)
		main := startManagerAs(managerID, ns, nil, shardManagerArgs("!"+controllers.ShardLabel, ns, mainShard)...)
		DeferCleanup(main.stop)
		Expect(a.logs()).To(MatchRegexp(leaseAcquired.String()))
		Expect(main.logs()).To(MatchRegexp(leaseAcquired.String()))

		By("a backend and its StateLock on shard a, and a backend on the main shard")
		onA := suiteBackend("app", ns+"-app").Obj()
		freeze := freezeOf("app")
		onA.Labels = map[string]string{controllers.ShardLabel: "a"}
		freeze.Labels = map[string]string{controllers.ShardLabel: "a"}
		onMain := suiteBackend("other", ns+"-other").Obj()
		kc.apply(ctx, ns, manifestOf(onA, freeze, onMain))
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "httpbackend/app", "httpbackend/other", "statelock/release-freeze", "--timeout=60s")
		id := kc.jsonpath(ctx, ns, "statelock/release-freeze", "{.status.lockID}")
		heldSince := kc.jsonpath(ctx, ns, "statelock/release-freeze", "{.status.heldSince}")
		Expect(id).NotTo(BeEmpty())

		By("each manager serving the series of its own backends only")
		Eventually(func(g Gomega) {
			g.Expect(appLockHeld(ctx, g, shardA, ns)).To(HaveValue(BeNumerically("==", 1)))
			g.Expect(appLockHeld(ctx, g, mainShard, ns)).To(BeNil())
			g.Expect(seriesValue(plainScrape(ctx, g, mainShard), "infrastate_backend_reachable", map[string]string{"namespace": ns, "name": "other"})).NotTo(BeNil())
			g.Expect(seriesValue(plainScrape(ctx, g, shardA), "infrastate_backend_reachable", map[string]string{"namespace": ns, "name": "other"})).To(BeNil())
		}).WithTimeout(probeTimeout).Should(Succeed())

		By("moving the backend and its StateLock to the main shard in one command")
		kc.must(ctx, ns, "label", "httpbackend/app", "statelock/release-freeze", controllers.ShardLabel+"-")
		moved := resourceVersions(ctx, ns, "httpbackend/app", "statelock/release-freeze")
		Eventually(func(g Gomega) {
			g.Expect(appLockHeld(ctx, g, mainShard, ns)).To(HaveValue(BeNumerically("==", 1)))
			g.Expect(appLockHeld(ctx, g, shardA, ns)).To(BeNil())
		}).WithTimeout(probeTimeout).Should(Succeed())

		By("a RemoteState left on shard a, naming the backend that moved")
		outputs := builders.MakeRemoteState("outputs", "", backendsv1alpha1.HttpBackendKind, "app").Obj()
		outputs.Labels = map[string]string{controllers.ShardLabel: "a"}
		kc.apply(ctx, ns, manifestOf(outputs))

		By("the lock held throughout, checked by the main shard at the backend's interval, and neither object written")
		// Longer than the backend's 10s probe interval, at which the
		// StateLock checks its lock.
		Consistently(func(g Gomega) {
			g.Expect(resourceVersions(ctx, ns, "httpbackend/app", "statelock/release-freeze")).To(Equal(moved))
		}).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(Succeed())
		Expect(kc.jsonpath(ctx, ns, "statelock/release-freeze", "{.status.lockID}")).To(Equal(id))
		Expect(kc.jsonpath(ctx, ns, "statelock/release-freeze", "{.status.heldSince}")).To(Equal(heldSince))
		status, body := lockAnswer(ctx, onA.Spec.Address, "LOCK", lockInfo{
			ID: uuid.NewString(), Operation: "OperationTypeApply", Who: "e2e@test", Created: time.Now().UTC().Format(time.RFC3339Nano),
		})
		Expect(status).To(Equal(http.StatusLocked))
		var holder lockInfo
		Expect(json.Unmarshal(body, &holder)).To(Succeed())
		Expect(holder.ID).To(Equal(id))
		Expect(holder.Who).To(Equal("backend-operator/" + ns + "/release-freeze"))

		By("the RemoteState reporting the backend on another shard once the move's grace has passed")
		kc.must(ctx, ns, "wait", `--for=jsonpath={.status.conditions[?(@.type=="Stalled")].reason}=`+backendsv1alpha1.ReferenceOnOtherShardReason,
			"remotestate/outputs", "--timeout=90s")
		_, _, message := kc.condition(ctx, ns, "remotestate/outputs", "Stalled")
		Expect(message).To(ContainSubstring("is on the main shard (no " + controllers.ShardLabel + " label)"))

		By("the RemoteState following its backend to the main shard")
		kc.must(ctx, ns, "label", "remotestate/outputs", controllers.ShardLabel+"-")
		Eventually(func(g Gomega) {
			_, reason, _ := kc.condition(ctx, ns, "remotestate/outputs", "Ready")
			g.Expect(reason).NotTo(BeElementOf("", backendsv1alpha1.ReferenceOnOtherShardReason))
		}).WithTimeout(probeTimeout).Should(Succeed())

		By("the main shard releasing the lock when the StateLock is deleted")
		kc.must(ctx, ns, "delete", "statelock/release-freeze", "--timeout=60s")
		Expect(sendLock(ctx, onA.Spec.Address, "LOCK", lockInfo{ID: "after", Operation: "OperationTypeApply", Who: "e2e@test"})).To(Equal(http.StatusOK))
		Expect(sendLock(ctx, onA.Spec.Address, "UNLOCK", lockInfo{ID: "after"})).To(Equal(http.StatusOK))
	})
})
