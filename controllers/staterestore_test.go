package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// restoreWithin bounds how long a restore takes to end: it runs again
// every learnRetry while it waits (for its backend to learn its server, or
// for a lock), and the suite's timeout covers the rest.
const restoreWithin = learnRetry*11/10 + timeout

// serverState reads the spec's state from the suite's state server.
func serverState(ctx context.Context, ns string) []byte {
	GinkgoHelper()
	var data []byte
	found, _, err := basicAuthClient(stateURL(ns)).StreamState(ctx, func(r io.Reader) error {
		var err error
		data, err = io.ReadAll(r)
		return err
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(found).To(BeTrue(), "the state server holds no state")
	return data
}

// stateDocument is state decoded, and its serial, which it no longer
// holds: what a restore writes back is the snapshot but for its serial.
func stateDocument(state []byte) (map[string]any, int64) {
	GinkgoHelper()
	var doc map[string]any
	Expect(json.Unmarshal(state, &doc)).To(Succeed())
	serial, ok := doc["serial"].(float64)
	Expect(ok).To(BeTrue(), "the state has no numeric serial")
	delete(doc, "serial")
	return doc, int64(serial)
}

// expectServerHolds asserts that the spec's state on the state server is
// snapshot, written as serial.
func expectServerHolds(ctx context.Context, ns string, snapshot []byte, serial int64) {
	GinkgoHelper()
	got, gotSerial := stateDocument(serverState(ctx, ns))
	want, _ := stateDocument(snapshot)
	Expect(got).To(Equal(want))
	Expect(gotSerial).To(Equal(serial))
}

// expectRestoreRefused waits until sr is refused for good with reason, its
// message holding every one of message, and asserts that the lock it
// took is released.
func expectRestoreRefused(ctx context.Context, sr *backendsv1alpha1.StateRestore, reason string, message ...string) {
	GinkgoHelper()
	eventuallyWithin(ctx, restoreWithin, sr, func(g Gomega) {
		expectKstatusInvariants(g, sr)
		expectConditionSaying(g, sr.Status.Conditions, "Stalled", metav1.ConditionTrue, reason, message...)
		expectConditionSaying(g, sr.Status.Conditions, "Ready", metav1.ConditionFalse, reason, message...)
		expectConditionSaying(g, sr.Status.Conditions, backendsv1alpha1.RestoredCondition, metav1.ConditionFalse, reason, message...)
	})
	Expect(sr.Status.WrittenSerial).To(BeZero())
	Expect(sr.Status.RestoredFrom).To(BeNil())
	Expect(peekLock(ctx, stateURL(sr.Namespace), true)).To(BeNil(), "the restore released the lock")
}

// expectRestored waits until sr wrote the snapshot of state, of serial,
// back to the source as serial written, above the source's serial
// previous.
func expectRestored(ctx context.Context, sr *backendsv1alpha1.StateRestore, state []byte, serial int, previous, written int64) {
	GinkgoHelper()
	eventuallyWithin(ctx, restoreWithin, sr, func(g Gomega) {
		expectKstatusInvariants(g, sr)
		message := fmt.Sprintf("Wrote serial %d of lineage lineage-1, kept by StateHistory app-history, back as serial %d, above the source's serial %d",
			serial, written, previous)
		expectConditionSaying(g, sr.Status.Conditions, "Ready", metav1.ConditionTrue, backendsv1alpha1.RestoredReason, message)
		expectConditionSaying(g, sr.Status.Conditions, backendsv1alpha1.RestoredCondition, metav1.ConditionTrue, backendsv1alpha1.RestoredReason, message)
		g.Expect(conditionOf(sr, "Stalled")).To(BeNil())
	})
	Expect(sr.Status.WrittenSerial).To(Equal(written))
	Expect(sr.Status.RestoredFrom).To(Equal(&backendsv1alpha1.RestoredSnapshot{
		Serial: int64(serial), Lineage: "lineage-1", SHA256: sha256Hex(state), Key: snapshotKey(appHistoryPrefix(sr.Namespace), serial, state),
	}))
	Expect(sr.Status.CompletionTime).NotTo(BeNil())
	Expect(sr.Status.Holder).To(BeNil())
	expectServerHolds(ctx, sr.Namespace, state, written)
	Expect(peekLock(ctx, stateURL(sr.Namespace), true)).To(BeNil(), "the restore released the lock")
}

var _ = Describe("StateRestore", func() {
	spec := eachSpecWithManager(WithLockReleaseWait(stateLockWait))
	BeforeEach(func() {
		createPassword(spec.ctx, spec.ns)
		createVault(spec.ctx, spec.ns)
	})
	// Whatever a spec made the controllers report, no credential is in
	// it.
	AfterEach(func() { expectNoSecretsIn(spec.ctx, spec.ns, []string{statePassword, cosSecretKey}) })

	first := v4State(1, `"vpc_id":{"value":"vpc-1","type":"string"}`)
	second := v4State(2, `"vpc_id":{"value":"vpc-2","type":"string"},"azs":{"value":3,"type":"number"}`)

	// keepStates has the history h keep each of states, of serials 1, 2,
	// ... in turn, written to the HttpBackend "app", which it creates with
	// lock addresses and no lock check: the backend learns what its server
	// does with locks only because a restore waits for it.
	keepStates := func(h *builders.StateHistoryWrapper, states ...[]byte) *backendsv1alpha1.StateHistory {
		GinkgoHelper()
		ctx, ns := spec.ctx, spec.ns
		createSource(ctx, makeStateBackend("app", ns).Locks(), states[0])
		history := h.Obj()
		create(ctx, history)
		eventuallyKept(ctx, history, 1, states[0])
		for i, state := range states[1:] {
			seedState(ctx, stateURL(ns), state)
			eventuallyKept(ctx, history, i+2, state)
		}
		return history
	}

	It("writes a kept snapshot back under the source's lock, as the serial above the source's", func() {
		ctx, ns := spec.ctx, spec.ns
		keepStates(makeAppHistory(ns), first, second)

		sr := builders.MakeStateRestore("back-to-1", ns, "app-history", 1).Obj()
		create(ctx, sr)
		expectRestored(ctx, sr, first, 1, 2, 3)
	})

	It("waits while a StateLock holds the source's lock, never forcing it, and writes once the StateLock is gone", func() {
		ctx, ns := spec.ctx, spec.ns
		keepStates(makeAppHistory(ns), first)
		sl := makeFreeze(ns, backendsv1alpha1.HttpBackendKind).Obj()
		create(ctx, sl)
		id := eventuallyHeld(ctx, sl)

		sr := builders.MakeStateRestore("back-to-1", ns, "app-history", 1).Obj()
		create(ctx, sr)
		eventually(ctx, sr, func(g Gomega) {
			expectKstatusInvariants(g, sr)
			message := []string{fmt.Sprintf("The source's lock is held by backend-operator/%s/freeze (lock ID %s", ns, id), "never forces it"}
			expectConditionSaying(g, sr.Status.Conditions, "Ready", metav1.ConditionFalse, backendsv1alpha1.WaitingForLockReason, message...)
			expectConditionSaying(g, sr.Status.Conditions, "Reconciling", metav1.ConditionTrue, backendsv1alpha1.WaitingForLockReason, message...)
			expectConditionSaying(g, sr.Status.Conditions, backendsv1alpha1.RestoredCondition, metav1.ConditionFalse, backendsv1alpha1.WaitingForLockReason, message...)
			g.Expect(conditionOf(sr, "Stalled")).To(BeNil())
			g.Expect(sr.Status.Holder).To(HaveValue(And(HaveField("ID", id), HaveField("Who", "backend-operator/"+ns+"/freeze"))))
		})
		Expect(sr.Status.WrittenSerial).To(BeZero())
		Expect(lockHolder(ctx, stateURL(ns), true)).To(Equal(id), "the StateLock still holds the lock")
		expectServerHolds(ctx, ns, first, 1)

		By("deleting the StateLock")
		Expect(k8sClient.Delete(ctx, sl)).To(Succeed())
		eventuallyGone(ctx, sl)
		expectRestored(ctx, sr, first, 1, 1, 2)
	})

	It("refuses a serial the history's retention pruned", func() {
		ctx, ns := spec.ctx, spec.ns
		h := keepStates(makeAppHistory(ns).RetainCount(1), first, second)
		Expect(h.Status.SnapshotCount).To(Equal(int32(1)))
		Expect(h.Status.Snapshots).To(ConsistOf(HaveField("Serial", int64(2))))
		_, _, ok := cosServer.Object(cosBucket(ns), snapshotKey(appHistoryPrefix(ns), 1, first))
		Expect(ok).To(BeFalse(), "retention pruned serial 1")

		sr := builders.MakeStateRestore("back-to-1", ns, "app-history", 1).Obj()
		create(ctx, sr)
		expectRestoreRefused(ctx, sr, backendsv1alpha1.SnapshotNotFoundReason,
			"StateHistory app-history keeps no snapshot of serial 1 under "+appHistoryPrefix(ns), "spec.retain pruned it",
			"Create another StateRestore naming a serial it keeps")
		expectServerHolds(ctx, ns, second, 2)
	})

	It("stalls when its history does not exist", func() {
		ctx, ns := spec.ctx, spec.ns
		sr := builders.MakeStateRestore("back-to-1", ns, "app-history", 1).Obj()
		expectExplained(ctx, sr, "Stalled", metav1.ConditionTrue, backendsv1alpha1.HistoryNotFoundReason,
			"StateHistory app-history, which spec.historyRef names, does not exist in namespace "+ns,
			"create another StateRestore naming one that exists")
		Expect(sr.Status.WrittenSerial).To(BeZero())
	})

	It("refuses a snapshot of another lineage than the source's state, and writes it when allowed", func() {
		ctx, ns := spec.ctx, spec.ns
		keepStates(makeAppHistory(ns), first)
		replaced := lineageState("lineage-2", 5, `"vpc_id":{"value":"vpc-other","type":"string"}`)
		seedState(ctx, stateURL(ns), replaced)

		sr := builders.MakeStateRestore("back-to-1", ns, "app-history", 1).Obj()
		create(ctx, sr)
		expectRestoreRefused(ctx, sr, backendsv1alpha1.LineageMismatchReason,
			"The snapshot of serial 1 is of lineage lineage-1, and the source's state is of lineage lineage-2",
			"Create another StateRestore with spec.allowLineageChange")
		Expect(serverState(ctx, ns)).To(Equal(replaced), "nothing was written")

		By("another StateRestore allowing the change of lineage")
		allowed := builders.MakeStateRestore("back-to-lineage-1", ns, "app-history", 1).AllowLineageChange().Obj()
		create(ctx, allowed)
		expectRestored(ctx, allowed, first, 1, 5, 6)
	})
})
