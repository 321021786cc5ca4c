package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos/costest"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// historyPrefix is the prefix the history of these specs writes under.
const historyPrefix = "e2e/network"

var _ = Describe("A StateHistory and its StateRestores", Ordered, func() {
	var (
		ns   string
		cos  *costest.Server
		sc   *stateclient.Client
		tf   *runner
		work string
		// states are the states the server held after each apply, by
		// serial, byte for byte; serials the serials in order.
		states  map[int64][]byte
		serials []int64
		// lineage is the lineage of the applies' states.
		lineage string
	)

	BeforeAll(func(ctx SpecContext) {
		ns = newNamespace(ctx, "history")
		work = GinkgoT().TempDir()
		states = map[int64][]byte{}
		cos = startHistoryCOS()
		mgr := startManager(ns, "--cos-service-url="+cos.ServiceURL().String())
		DeferCleanup(mgr.stop)

		By("an HttpBackend with lock addresses on the state server, and a CosBackend as the destination")
		createStateServerSecrets(ctx, ns, statePassword)
		kc.apply(ctx, ns, manifestOf(suiteBackend("network", ns+"-network").Obj()))
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "httpbackend/network", "--timeout=60s")
		createSnapshotsBackend(ctx, ns)
		sc = suiteStateClient(ns + "-network")

		By("a StateHistory keeping five snapshots")
		kc.apply(ctx, ns, manifestOf(makeStateHistory("network", "network", historyPrefix, 10*time.Second, 5)))
		Eventually(func(g Gomega) {
			_, reason, _ := kc.condition(ctx, ns, "statehistory/network", backendsv1alpha1.SnapshotsReadyCondition)
			g.Expect(reason).To(Equal(backendsv1alpha1.StateNotFoundReason))
		}).Should(Succeed(), "the history reads the source, which holds no state yet")

		tf = newHistoryRunner(ctx, work, ns, "network-backend", "network-backend-credentials")
		tf.init(ctx)
	})

	It("keeps five applies as five snapshots, byte for byte, and prunes them to spec.retain.count", func(ctx SpecContext) {
		for n := 1; n <= 5; n++ {
			By("terraform apply -var n=" + strconv.Itoa(n))
			tf.apply(ctx, "-var=n="+strconv.Itoa(n))
			state := serverState(ctx, sc)
			header := headerOf(state)
			Expect(states).NotTo(HaveKey(header.Serial), "each apply writes a new serial")
			states[header.Serial], serials = state, append(serials, header.Serial)
			if lineage == "" {
				lineage = header.Lineage
			}
			Expect(header.Lineage).To(Equal(lineage))
			Eventually(func(g Gomega) {
				_, ok := snapshotOf(getHistory(ctx, ns, "network"), header.Serial)
				g.Expect(ok).To(BeTrue(), "the history lists serial %d", header.Serial)
			}).WithTimeout(probeTimeout).Should(Succeed())
		}

		By("the history lists the five serials, newest first, each stored byte for byte under its key")
		h := getHistory(ctx, ns, "network")
		Expect(serialsOf(h)).To(Equal([]int64{serials[4], serials[3], serials[2], serials[1], serials[0]}))
		Expect(h.Status.SnapshotCount).To(BeEquivalentTo(5))
		Expect(h.Status.SkippedSerials).To(BeEmpty())
		Expect(h.Status.DestinationPrefix).To(Equal(historyPrefix))
		for _, serial := range serials {
			state := states[serial]
			s, _ := snapshotOf(h, serial)
			Expect(s.Key).To(Equal(snapshotKey(historyPrefix, state)))
			Expect(s.Lineage).To(Equal(lineage))
			Expect(s.SizeBytes).To(BeEquivalentTo(len(state)))
			Expect(s.SHA256).To(Equal(sha256Hex(state)))
			stored, _, ok := cos.Object(historyBucket, s.Key)
			Expect(ok).To(BeTrue(), "the bucket holds %s", s.Key)
			Expect(stored).To(Equal(state), "the snapshot of serial %d is the state the server held", serial)
		}
		status, reason, _ := kc.condition(ctx, ns, "statehistory/network", "Ready")
		Expect(status + " " + reason).To(Equal("True Succeeded"))

		By("lowering spec.retain.count to 3 prunes the two oldest from the bucket")
		kc.must(ctx, ns, "patch", "statehistory", "network", "--type=merge", "-p", `{"spec":{"retain":{"count":3}}}`)
		Eventually(func(g Gomega) {
			h := getHistory(ctx, ns, "network")
			g.Expect(h.Status.SnapshotCount).To(BeEquivalentTo(3))
			g.Expect(serialsOf(h)).To(Equal([]int64{serials[4], serials[3], serials[2]}))
		}).WithTimeout(probeTimeout).Should(Succeed())
		for i, serial := range serials {
			_, _, ok := cos.Object(historyBucket, snapshotKey(historyPrefix, states[serial]))
			Expect(ok).To(Equal(i >= 2), "serial %d kept: %t", serial, i >= 2)
		}
		_, _, message := kc.condition(ctx, ns, "statehistory/network", backendsv1alpha1.SnapshotsReadyCondition)
		Expect(message).To(ContainSubstring("2 older snapshots pruned by spec.retain"))
	})

	It("restores serial 3 as a new serial above the source's, which Terraform then plans from", func(ctx SpecContext) {
		third, newest := states[serials[2]], headerOf(states[serials[4]])
		kc.apply(ctx, ns, manifestOf(makeStateRestore("back-to-3", "network", serials[2])))
		Eventually(func(g Gomega) {
			status, reason, message := kc.condition(ctx, ns, "staterestore/back-to-3", "Ready")
			g.Expect(status + " " + reason).To(Equal("True " + backendsv1alpha1.RestoredReason))
			g.Expect(message).To(ContainSubstring("back as serial"))
		}).Should(Succeed())
		written, err := strconv.ParseInt(kc.jsonpath(ctx, ns, "staterestore/back-to-3", "{.status.writtenSerial}"), 10, 64)
		Expect(err).NotTo(HaveOccurred())
		Expect(written).To(Equal(newest.Serial + 1))
		Expect(kc.jsonpath(ctx, ns, "staterestore/back-to-3", "{.status.restoredFrom.serial} {.status.restoredFrom.sha256} {.status.restoredFrom.key}")).
			To(Equal(strconv.FormatInt(serials[2], 10) + " " + sha256Hex(third) + " " + snapshotKey(historyPrefix, third)))

		By("the server holds serial 3's state, byte for byte but for its serial, in the same lineage")
		restored := serverState(ctx, sc)
		Expect(headerOf(restored)).To(Equal(stateHeader{Serial: written, Lineage: lineage}))
		topSerial := regexp.MustCompile(`("serial":\s*)` + strconv.FormatInt(serials[2], 10))
		Expect(string(restored)).To(Equal(topSerial.ReplaceAllString(string(third), "${1}"+strconv.FormatInt(written, 10))))

		By("terraform plan: -var n=5 proposes a change, -var n=3 none")
		out, err := tf.run(ctx, "plan", "-input=false", "-no-color", "-lock-timeout=30s", "-detailed-exitcode", "-var=n=5")
		Expect(exitCode(err)).To(Equal(2), out)
		Expect(out).To(MatchRegexp(`input\s+= 3 -> 5`))
		out, err = tf.run(ctx, "plan", "-input=false", "-no-color", "-lock-timeout=30s", "-detailed-exitcode", "-var=n=3")
		Expect(exitCode(err)).To(Equal(0), out)

		By("the history keeps the restored state as a snapshot of its own")
		Eventually(func(g Gomega) {
			_, ok := snapshotOf(getHistory(ctx, ns, "network"), written)
			g.Expect(ok).To(BeTrue())
		}).WithTimeout(probeTimeout).Should(Succeed())
	})

	It("waits while a StateLock holds the source's lock, naming it, and writes once it is deleted", func(ctx SpecContext) {
		kc.apply(ctx, ns, manifestOf(freezeOf("network")))
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "statelock/release-freeze", "--timeout=60s")
		lockID := kc.jsonpath(ctx, ns, "statelock/release-freeze", "{.status.lockID}")
		Expect(lockID).NotTo(BeEmpty())
		before := headerOf(serverState(ctx, sc))

		kc.apply(ctx, ns, manifestOf(makeStateRestore("during-freeze", "network", serials[3])))
		Eventually(func(g Gomega) {
			status, reason, message := kc.condition(ctx, ns, "staterestore/during-freeze", "Ready")
			g.Expect(status).To(Equal("False"))
			g.Expect(reason).To(Equal(backendsv1alpha1.WaitingForLockReason))
			g.Expect(message).To(ContainSubstring(lockID))
			g.Expect(kc.jsonpath(ctx, ns, "staterestore/during-freeze", "{.status.holder.who} {.status.holder.id}")).
				To(Equal("backend-operator/" + ns + "/release-freeze " + lockID))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(headerOf(serverState(ctx, sc))).To(Equal(before))
		}).WithTimeout(5*time.Second).WithPolling(time.Second).Should(Succeed(), "nothing is written while the StateLock holds the lock")
		Expect(kc.jsonpath(ctx, ns, "statelock/release-freeze", "{.status.lockID}")).To(Equal(lockID), "the restore never forces the lock")

		By("deleting the StateLock lets the restore write")
		kc.must(ctx, ns, "delete", "statelock", "release-freeze", "--timeout=60s")
		Eventually(func(g Gomega) {
			status, reason, _ := kc.condition(ctx, ns, "staterestore/during-freeze", "Ready")
			g.Expect(status + " " + reason).To(Equal("True " + backendsv1alpha1.RestoredReason))
		}).Should(Succeed())
		Expect(kc.jsonpath(ctx, ns, "staterestore/during-freeze", "{.status.writtenSerial}")).To(Equal(strconv.FormatInt(before.Serial+1, 10)))
		Expect(kc.jsonpath(ctx, ns, "staterestore/during-freeze", "{.status.holder}")).To(BeEmpty())
		Expect(headerOf(serverState(ctx, sc))).To(Equal(stateHeader{Serial: before.Serial + 1, Lineage: lineage}))
	})

	It("refuses to write a snapshot over a state of another lineage", func(ctx SpecContext) {
		oldSerial := headerOf(serverState(ctx, sc)).Serial
		Eventually(func(g Gomega) {
			_, ok := snapshotOf(getHistory(ctx, ns, "network"), oldSerial)
			g.Expect(ok).To(BeTrue())
		}).WithTimeout(probeTimeout).Should(Succeed(), "the history keeps the newest serial of the old lineage")

		By("terraform state push -force of another stack's state, of a lineage of its own")
		other := filepath.Join(work, "other")
		otherRunner := &runner{cli: terraformCLI, dir: other, env: append(testtools.TerraformEnv(GinkgoT(), other), egress.env()...)}
		Expect(os.MkdirAll(other, 0o700)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(other, "main.tf"), []byte(historyStack), 0o600)).To(Succeed())
		otherRunner.must(ctx, "init", "-input=false")
		otherRunner.apply(ctx, "-var=n=42")
		tf.must(ctx, "state", "push", "-force", "-lock-timeout=30s", filepath.Join(other, "terraform.tfstate"))
		replaced := serverState(ctx, sc)
		Expect(headerOf(replaced).Lineage).NotTo(Equal(lineage))

		By("a StateRestore of the old lineage's serial stalls with LineageMismatch")
		kc.apply(ctx, ns, manifestOf(makeStateRestore("old-lineage", "network", oldSerial)))
		Eventually(func(g Gomega) {
			status, reason, message := kc.condition(ctx, ns, "staterestore/old-lineage", "Stalled")
			g.Expect(status).To(Equal("True"))
			g.Expect(reason).To(Equal(backendsv1alpha1.LineageMismatchReason))
			g.Expect(message).To(ContainSubstring(headerOf(replaced).Lineage))
		}).Should(Succeed())
		status, reason, _ := kc.condition(ctx, ns, "staterestore/old-lineage", "Ready")
		Expect(status + " " + reason).To(Equal("False " + backendsv1alpha1.LineageMismatchReason))
		Expect(kc.jsonpath(ctx, ns, "staterestore/old-lineage", "{.status.writtenSerial}")).To(BeEmpty())
		Expect(serverState(ctx, sc)).To(Equal(replaced), "nothing is written")
	})
})
