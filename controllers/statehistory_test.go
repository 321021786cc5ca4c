package controllers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// readInterval is how often the histories of these specs read their
// source: the shortest interval the API takes.
const readInterval = 10 * time.Second

// nextRead bounds how long a history takes to read its source again: its
// interval, jittered by up to 10%, and the suite's timeout for the rest.
const nextRead = readInterval*11/10 + timeout

// createVault creates the spec's bucket on the suite's COS server and the
// CosBackend "vault" of it, with its credentials, and waits until it is
// Ready: the destination of the histories of these specs.
func createVault(ctx context.Context, ns string) {
	GinkgoHelper()
	cosServer.CreateBucket(cosBucket(ns))
	vault := makeCosStateBackend("vault", ns, cosBucket(ns)).Obj()
	create(ctx, cosCredentials(ns), vault)
	eventuallyReady(ctx, vault)
}

// createSource writes state to the state of the HttpBackend w builds, on
// the suite's state server, creates the backend, and waits until its probe
// has seen the state: a new serial its probe sees makes its histories read
// at once, and the reads of these specs are then their interval's.
func createSource(ctx context.Context, w *builders.HttpBackendWrapper, state []byte) *backendsv1alpha1.HttpBackend {
	GinkgoHelper()
	backend := w.Obj()
	seedState(ctx, backend.Spec.Address, state)
	create(ctx, backend)
	eventually(ctx, backend, func(g Gomega) {
		expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
		g.Expect(backend.Status.State).To(HaveValue(HaveField("Present", true)))
	})
	return backend
}

// makeAppHistory starts the StateHistory "app-history" of the HttpBackend
// "app", kept in "vault" under the default prefix and read every
// readInterval.
func makeAppHistory(ns string) *builders.StateHistoryWrapper {
	return builders.MakeStateHistory("app-history", ns, backendsv1alpha1.HttpBackendKind, "app", "vault").Interval(readInterval)
}

// appHistoryPrefix is the prefix "app-history" writes under by default.
func appHistoryPrefix(ns string) string { return "state-history/" + ns + "/app-history" }

// sha256Hex is the hex SHA-256 of data.
func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// snapshotKey is the key a snapshot of state, of lineage-1 and serial,
// has under prefix: <prefix>/<lineage>/<serial, 20 digits>-<sha256>.tfstate.
func snapshotKey(prefix string, serial int, state []byte) string {
	return fmt.Sprintf("%s/lineage-1/%020d-%s.tfstate", prefix, serial, sha256Hex(state))
}

// lineageState is v4State of another lineage.
func lineageState(lineage string, serial int, outputs string) []byte {
	return bytes.Replace(v4State(serial, outputs), []byte(`"lineage":"lineage-1"`), []byte(`"lineage":"`+lineage+`"`), 1)
}

// eventuallyKept waits until h keeps state, of lineage-1 and serial, as
// its newest snapshot, and returns that snapshot.
func eventuallyKept(ctx context.Context, h *backendsv1alpha1.StateHistory, serial int, state []byte) backendsv1alpha1.StateSnapshot {
	GinkgoHelper()
	eventuallyWithin(ctx, nextRead, h, func(g Gomega) {
		expectKstatusInvariants(g, h)
		expectConditionSaying(g, h.Status.Conditions, backendsv1alpha1.SnapshotsReadyCondition, metav1.ConditionTrue, backendsv1alpha1.SnapshotStoredReason,
			fmt.Sprintf("Serial %d of lineage lineage-1", serial), fmt.Sprintf("(%d bytes, sha256 %s)", len(state), sha256Hex(state)))
		expectConditionSaying(g, h.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded", fmt.Sprintf("Serial %d is kept", serial))
		g.Expect(h.Status.Snapshots).NotTo(BeEmpty())
		g.Expect(h.Status.Snapshots[0].Serial).To(Equal(int64(serial)))
	})
	return h.Status.Snapshots[0]
}

// expectSnapshot asserts what status.snapshots says of the snapshot of
// state, and that the destination holds it byte for byte.
func expectSnapshot(ns string, got backendsv1alpha1.StateSnapshot, prefix string, serial int, state []byte) {
	GinkgoHelper()
	key := snapshotKey(prefix, serial, state)
	Expect(got).To(And(
		HaveField("Serial", int64(serial)), HaveField("Lineage", "lineage-1"), HaveField("SizeBytes", int64(len(state))),
		HaveField("SHA256", sha256Hex(state)), HaveField("Key", key),
	))
	Expect(got.TakenAt.IsZero()).To(BeFalse())
	data, _, ok := cosServer.Object(cosBucket(ns), key)
	Expect(ok).To(BeTrue(), "the destination holds no object %s", key)
	Expect(data).To(Equal(state), "the snapshot is the state byte for byte")
}

var _ = Describe("StateHistory", func() {
	spec := eachSpecWithManager()
	BeforeEach(func() {
		createPassword(spec.ctx, spec.ns)
		createVault(spec.ctx, spec.ns)
	})
	// Whatever a spec made the controllers report, no credential is in
	// it.
	AfterEach(func() { expectNoSecretsIn(spec.ctx, spec.ns, []string{statePassword, cosSecretKey}) })

	first := v4State(1, `"vpc_id":{"value":"vpc-1","type":"string"}`)
	second := v4State(2, `"vpc_id":{"value":"vpc-2","type":"string"}`)

	It("keeps each serial of an HttpBackend's state byte for byte, keyed by lineage, serial and hash", func() {
		ctx, ns := spec.ctx, spec.ns
		createSource(ctx, makeStateBackend("app", ns), first)
		h := makeAppHistory(ns).Obj()
		create(ctx, h)

		kept := eventuallyKept(ctx, h, 1, first)
		Expect(h.Status.SnapshotCount).To(Equal(int32(1)))
		Expect(h.Status.Snapshots).To(HaveLen(1))
		Expect(h.Status.DestinationPrefix).To(Equal(appHistoryPrefix(ns)))
		Expect(h.Status.LastReadTime).NotTo(BeNil())
		expectSnapshot(ns, kept, appHistoryPrefix(ns), 1, first)

		By("a run writing serial 2: the next read keeps it too")
		seedState(ctx, stateURL(ns), second)
		kept = eventuallyKept(ctx, h, 2, second)
		expectConditionSaying(Default, h.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded", "Serial 2 is kept, with 1 older snapshots")
		Expect(h.Status.SnapshotCount).To(Equal(int32(2)))
		Expect(h.Status.Snapshots).To(HaveLen(2))
		expectSnapshot(ns, kept, appHistoryPrefix(ns), 2, second)
		expectSnapshot(ns, h.Status.Snapshots[1], appHistoryPrefix(ns), 1, first)
		Expect(h.Status.SkippedSerials).To(BeEmpty())
	})

	It("reports a destination that does not answer, keeping the snapshots it listed before", func() {
		ctx, ns := spec.ctx, spec.ns
		createSource(ctx, makeStateBackend("app", ns), first)
		h := makeAppHistory(ns).Obj()
		create(ctx, h)
		eventuallyKept(ctx, h, 1, first)

		By("a manager whose COS service is a loopback port nothing listens on")
		spec.writes.stop()
		startManager(ctx, ns, WithCosServiceURL(&url.URL{Scheme: "http", Host: "127.0.0.1:1"}))
		eventuallyWithin(ctx, nextRead, h, func(g Gomega) {
			expectKstatusInvariants(g, h)
			for _, t := range []string{backendsv1alpha1.SnapshotsReadyCondition, "Ready"} {
				expectConditionSaying(g, h.Status.Conditions, t, metav1.ConditionFalse, backendsv1alpha1.DestinationUnreachableReason,
					"The destination did not answer", "connection refused", "Check the CosBackend's endpoint and region")
			}
		})
		Expect(h.Status.SnapshotCount).To(Equal(int32(1)))
		Expect(h.Status.Snapshots).To(HaveLen(1))
		expectSnapshot(ns, h.Status.Snapshots[0], appHistoryPrefix(ns), 1, first)
	})

	DescribeTable("reports a destination that does not take the snapshot, and keeps it at the next read once it does, without a spec change",
		func(refuse, allow func(bucket, prefix string), reason string, message ...string) {
			ctx, ns, bucket := spec.ctx, spec.ns, cosBucket(spec.ns)
			refuse(bucket, appHistoryPrefix(ns))
			createSource(ctx, makeStateBackend("app", ns), first)
			h := makeAppHistory(ns).Obj()
			create(ctx, h)
			eventually(ctx, h, func(g Gomega) {
				expectKstatusInvariants(g, h)
				for _, t := range []string{backendsv1alpha1.SnapshotsReadyCondition, "Ready"} {
					expectConditionSaying(g, h.Status.Conditions, t, metav1.ConditionFalse, reason, message...)
				}
			})
			Expect(h.Status.Snapshots).To(BeEmpty())
			_, _, ok := cosServer.Object(bucket, snapshotKey(appHistoryPrefix(ns), 1, first))
			Expect(ok).To(BeFalse())
			generation := h.Generation

			By("the destination taking objects again")
			allow(bucket, appHistoryPrefix(ns))
			kept := eventuallyKept(ctx, h, 1, first)
			Expect(h.Generation).To(Equal(generation))
			expectSnapshot(ns, kept, appHistoryPrefix(ns), 1, first)
		},
		Entry("DestinationRefused: the credentials may only read",
			func(bucket, _ string) { cosServer.DenyWrites(bucket, true) },
			func(bucket, _ string) { cosServer.DenyWrites(bucket, false) },
			backendsv1alpha1.DestinationRefusedReason, "The destination refused the operator's requests", "AccessDenied",
			"Its credentials need to list, read, write and delete objects under the prefix"),
		Entry("DestinationFull: the bucket is at its quota",
			func(bucket, _ string) { cosServer.SetQuota(bucket, 64) },
			func(bucket, _ string) { cosServer.SetQuota(bucket, 0) },
			backendsv1alpha1.DestinationFullReason, "The destination refuses new objects", "Raise the bucket's quota or free space, or lower spec.retain"),
		Entry("DestinationFull: the prefix holds more objects than a history lists",
			func(bucket, prefix string) {
				for i := range historyListLimit + 1 {
					cosServer.PutObject(bucket, fmt.Sprintf("%s/notes/%04d.txt", prefix, i), []byte("not a snapshot"), nil)
				}
			},
			func(bucket, prefix string) {
				for i := range historyListLimit + 1 {
					cosServer.DeleteObject(bucket, fmt.Sprintf("%s/notes/%04d.txt", prefix, i))
				}
			},
			backendsv1alpha1.DestinationFullReason, fmt.Sprintf("The destination's prefix holds more than %d objects", historyListLimit),
			"Move the objects that are not snapshots elsewhere, or set another spec.destination.prefix"),
	)

	It("stalls when its source is deleted, keeping the snapshots it listed and saying where they stay", func() {
		ctx, ns := spec.ctx, spec.ns
		backend := createSource(ctx, makeStateBackend("app", ns), first)
		h := makeAppHistory(ns).Obj()
		create(ctx, h)
		eventuallyKept(ctx, h, 1, first)

		Expect(k8sClient.Delete(ctx, backend)).To(Succeed())
		eventually(ctx, h, func(g Gomega) {
			expectKstatusInvariants(g, h)
			message := []string{"HttpBackend app does not exist in namespace " + ns, "The snapshots taken so far stay under " + appHistoryPrefix(ns),
				"create the backend again, or point spec.backendRef at one that exists"}
			expectConditionSaying(g, h.Status.Conditions, "Stalled", metav1.ConditionTrue, backendsv1alpha1.BackendNotFoundReason, message...)
			expectConditionSaying(g, h.Status.Conditions, "Ready", metav1.ConditionFalse, backendsv1alpha1.BackendNotFoundReason, message...)
		})
		Expect(h.Status.SnapshotCount).To(Equal(int32(1)))
		Expect(h.Status.Snapshots).To(HaveLen(1))
		expectSnapshot(ns, h.Status.Snapshots[0], appHistoryPrefix(ns), 1, first)
	})

	It("stalls while its destination CosBackend does not exist, and keeps the state once it does", func() {
		ctx, ns := spec.ctx, spec.ns
		createSource(ctx, makeStateBackend("app", ns), first)
		h := builders.MakeStateHistory("app-history", ns, backendsv1alpha1.HttpBackendKind, "app", "archive").Interval(readInterval).Obj()
		expectExplained(ctx, h, "Stalled", metav1.ConditionTrue, backendsv1alpha1.BackendNotFoundReason,
			"CosBackend archive, which spec.destination.cosBackendRef names, does not exist in namespace "+ns, "create it, or name one that exists")
		Expect(h.Status.Snapshots).To(BeEmpty())

		By("creating the CosBackend")
		create(ctx, makeCosStateBackend("archive", ns, cosBucket(ns)).Obj())
		expectSnapshot(ns, eventuallyKept(ctx, h, 1, first), appHistoryPrefix(ns), 1, first)
	})

	It("stalls the younger of two histories writing to one prefix of a bucket, and leaves the older one working", func() {
		ctx, ns := spec.ctx, spec.ns
		createSource(ctx, makeStateBackend("app", ns), first)
		older := makeAppHistory(ns).Prefix("shared").Obj()
		create(ctx, older)
		expectSnapshot(ns, eventuallyKept(ctx, older, 1, first), "shared", 1, first)

		By("a second history, through another CosBackend of the same bucket, naming the same prefix")
		create(ctx, makeCosStateBackend("archive", ns, cosBucket(ns)).Obj())
		younger := builders.MakeStateHistory("web-history", ns, backendsv1alpha1.HttpBackendKind, "app", "archive").Prefix("shared").Obj()
		expectExplained(ctx, younger, "Stalled", metav1.ConditionTrue, backendsv1alpha1.PrefixInUseReason,
			"StateHistory app-history already writes to prefix shared of bucket "+cosBucket(ns), "set another spec.destination.prefix")
		Expect(younger.Status.Snapshots).To(BeEmpty())

		By("the older history reading again, unaffected")
		seedState(ctx, stateURL(ns), second)
		kept := eventuallyKept(ctx, older, 2, second)
		Expect(older.Status.SnapshotCount).To(Equal(int32(2)))
		expectSnapshot(ns, kept, "shared", 2, second)
		getObject(ctx, Default, younger)
		expectCondition(Default, younger.Status.Conditions, "Stalled", metav1.ConditionTrue, backendsv1alpha1.PrefixInUseReason)
	})
})
