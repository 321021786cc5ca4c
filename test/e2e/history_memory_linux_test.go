package e2e

import (
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// snapshotMemoryBound is how far taking a snapshot may raise the manager's
// peak resident memory: the state streams through a spool file, so a
// 50 MiB state must cost a few buffers, not its size.
const snapshotMemoryBound = 8 << 20

var _ = Describe("A snapshot of a 50 MiB state", func() {
	It("is kept byte for byte with the manager's peak memory within a few MiB of its idle level", func(ctx SpecContext) {
		ns := newNamespace(ctx, "history-memory")
		server := startStateServer(stateServerOptions{dataDir: filepath.Join(GinkgoT().TempDir(), "states")})
		DeferCleanup(server.stop)

		By("uploading a 50 MiB state")
		state := manyOutputsState(1_350_000)
		GinkgoWriter.Printf("state of %d bytes (%.1f MiB)\n", len(state), float64(len(state))/(1<<20))
		Expect(len(state)).To(BeNumerically(">=", 50<<20))
		sc, err := stateclient.New(stateclient.DefaultConfig(server.stateURL("huge")))
		Expect(err).NotTo(HaveOccurred())
		Expect(sc.Update(ctx, state)).To(Succeed())

		By("running the manager as shipped (GOMEMLIMIT=256MiB), its backend probing the state once")
		cos := startHistoryCOS()
		mgr := startManagerWithEnv(ns, []string{"GOMEMLIMIT=256MiB"}, "--cos-service-url="+cos.ServiceURL().String())
		DeferCleanup(mgr.stop)
		createSnapshotsBackend(ctx, ns)
		// Probed once when created, then not for an hour: the idle level
		// includes one full read of the state, and no probe runs beside
		// the snapshot. The first read of a large state, whatever reads
		// it, raises the peak once by the garbage collector's headroom
		// (about 10 MiB, the same for a 12 MiB state as for this one):
		// measured after it, the peak shows what the snapshot itself
		// holds, which for a state held in memory would be 50 MiB.
		kc.apply(ctx, ns, manifestOf(makeBackend("huge", server.stateURL("huge")).ProbeInterval(time.Hour).Obj()))
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "httpbackend/huge", "--timeout=120s")
		Eventually(func(g Gomega) {
			g.Expect(kc.jsonpath(ctx, ns, "httpbackend/huge", "{.status.state.serial} {.status.state.sizeBytes}")).To(Equal("1 " + strconv.Itoa(len(state))))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		idle := testtools.PeakResidentBytes(GinkgoT(), mgr.cmd.Process.Pid)

		By("a StateHistory snapshotting it")
		kc.apply(ctx, ns, manifestOf(makeStateHistory("huge", "huge", "e2e/huge", time.Hour, 0)))
		var key string
		Eventually(func(g Gomega) {
			h := getHistory(ctx, ns, "huge")
			s, ok := snapshotOf(h, 1)
			g.Expect(ok).To(BeTrue(), "the history keeps serial 1")
			key = s.Key
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		status, reason, _ := kc.condition(ctx, ns, "statehistory/huge", backendsv1alpha1.SnapshotsReadyCondition)
		Expect(status + " " + reason).To(Equal("True " + backendsv1alpha1.SnapshotStoredReason))
		peak := testtools.PeakResidentBytes(GinkgoT(), mgr.cmd.Process.Pid)

		stored, _, ok := cos.Object(historyBucket, key)
		Expect(ok).To(BeTrue())
		Expect(stored).To(HaveLen(len(state)))
		Expect(sha256Hex(stored)).To(Equal(sha256Hex(state)))
		Expect(key).To(Equal(snapshotKey("e2e/huge", state)))

		GinkgoWriter.Printf("manager peak resident memory: idle %.1f MiB, after the snapshot %.1f MiB (+%.1f MiB)\n",
			mib(idle), mib(peak), mib(peak-idle))
		Expect(peak-idle).To(BeNumerically("<", snapshotMemoryBound), "the manager's memory must not grow with the state it snapshots")
		select {
		case <-mgr.exited:
			Fail("the manager exited:\n" + mgr.logs())
		default:
		}
	})
})

// mib is n bytes in MiB.
func mib(n int64) float64 { return float64(n) / (1 << 20) }
