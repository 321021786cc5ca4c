package controllers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/stateserver"
)

// reprobe changes a backend's spec in a way that does not change what the
// probe reads, so that its next reconcile probes at once (new inputs).
func reprobe(ctx context.Context, backend *backendsv1alpha1.HttpBackend) {
	updateSpec(ctx, backend, func() {
		retries := int32(1)
		if backend.Spec.RetryMax != nil && *backend.Spec.RetryMax == 1 {
			retries = 0
		}
		backend.Spec.RetryMax = &retries
	})
}

// lockHolder returns the ID of the lock a state server holds at address,
// "" when it holds none.
func lockHolder(ctx context.Context, address string, basicAuth bool) string {
	sc := lockingClient(address, basicAuth)
	info := stateclient.NewLockInfo("OperationTypeInvalid", "test")
	_, err := sc.Lock(ctx, info)
	if err == nil {
		Expect(sc.Unlock(ctx, info.ID)).To(Succeed())
		return ""
	}
	var lockErr *stateclient.LockError
	Expect(err).To(BeAssignableToTypeOf(lockErr))
	lockErr = err.(*stateclient.LockError)
	Expect(lockErr.Info).NotTo(BeNil())
	return lockErr.Info.ID
}

var _ = Describe("Locks", func() {
	var (
		ctx context.Context
		ns  string
	)

	BeforeEach(func() {
		ctx, ns = newSpec()
		startManager(ctx, ns)
		createPassword(ctx, ns)
	})

	It("reports a failed lock check as Unknown, keeping the last holder, and never as a release", func() {
		holder := holdLock(ctx, stateURL(ns))
		backend := makeHttpBackend("app", ns, stateURL(ns)).locks().basicAuth(stateUser, "state-password", "").lockCheck().retries(0, 1, 1).build()
		Expect(k8sClient.Create(ctx, backend)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "LockHeld")
		}, timeout, interval).Should(Succeed())

		By("the server failing the lock check")
		path := "/state/" + ns
		stateServer.InjectFault(stateserver.Fault{Method: stateserver.MethodLock, Path: path, Status: http.StatusInternalServerError})
		DeferCleanup(stateServer.ClearFaults)
		reprobe(ctx, backend)
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			g.Expect(backend.Status.ObservedGeneration).To(Equal(backend.Generation))
			c := expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionUnknown, "ServerError")
			g.Expect(c.Message).To(ContainSubstring("500"))
		}, timeout, interval).Should(Succeed())
		Expect(backend.Status.Lock).NotTo(BeNil(), "the last holder seen is kept")
		Expect(backend.Status.Lock.ID).To(Equal(holder))
		Consistently(func(g Gomega) []string { return eventReasons(ctx, g, ns) }, 2*time.Second, interval).
			ShouldNot(ContainElement("LockReleased"))
	})

	It("releases, at its next probe, a lock its own check could not release", func() {
		path := "/state/" + ns
		stateServer.InjectFault(stateserver.Fault{Method: stateserver.MethodUnlock, Path: path, Status: http.StatusBadGateway})
		DeferCleanup(stateServer.ClearFaults)
		backend := makeHttpBackend("app", ns, stateURL(ns)).locks().basicAuth(stateUser, "state-password", "").lockCheck().retries(0, 1, 1).build()
		Expect(k8sClient.Create(ctx, backend)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			c := expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "LockCheckNotReleased")
			g.Expect(c.Message).To(ContainSubstring("operator's own lock check"))
			g.Expect(backend.Status.Lock).NotTo(BeNil())
			g.Expect(backend.Status.Lock.Who).To(Equal("backend-operator lock check of HttpBackend " + ns + "/app"))
		}, timeout, interval).Should(Succeed())
		Expect(lockHolder(ctx, stateURL(ns), true)).To(Equal(backend.Status.Lock.ID), "the server holds the check's lock")

		By("the server answering again")
		stateServer.ClearFaults()
		reprobe(ctx, backend)
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			g.Expect(backend.Status.ObservedGeneration).To(Equal(backend.Generation))
			expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionFalse, "NotLocked")
			g.Expect(backend.Status.Lock).To(BeNil())
		}, timeout, interval).Should(Succeed())
		Expect(lockHolder(ctx, stateURL(ns), true)).To(BeEmpty(), "the check's lock is released")
	})

	DescribeTable("force unlock releases the named lock on servers that accept different UNLOCK bodies",
		func(accept stateserver.UnlockBodies, released bool) {
			srv := httptest.NewServer(stateserver.New(stateserver.NewMemoryStore(), stateserver.WithUnlockBodies(accept)))
			DeferCleanup(srv.Close)
			address := srv.URL + "/state/app"
			holder := holdLockAs(ctx, address, false)
			backend := makeHttpBackend("app", ns, address).locks().lockCheck().forceUnlock(holder).build()
			Expect(k8sClient.Create(ctx, backend)).To(Succeed())
			if released {
				Eventually(func(g Gomega) {
					getObject(ctx, g, backend)
					expectForceUnlocked(g, backend.Status.Conditions, backend.Status.Lock, backend.Status.LastForceUnlock, holder)
				}, timeout, interval).Should(Succeed())
				Expect(lockHolder(ctx, address, false)).To(BeEmpty())
				return
			}
			Eventually(func(g Gomega) {
				getObject(ctx, g, backend)
				c := expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "ForceUnlockRefused")
				g.Expect(c.Message).To(ContainSubstring("HTTP 400"))
				g.Expect(c.Message).To(ContainSubstring("HTTP 500"))
				g.Expect(backend.Status.Lock).NotTo(BeNil())
				g.Expect(backend.Status.Lock.ID).To(Equal(holder))
				g.Expect(backend.Status.LastForceUnlock).To(BeNil())
			}, timeout, interval).Should(Succeed())
			Expect(lockHolder(ctx, address, false)).To(Equal(holder), "the lock is still held")
		},
		Entry("any body", stateserver.AcceptAnyUnlock, true),
		Entry("only Terraform's empty body", stateserver.AcceptEmptyUnlock, true),
		Entry("only a body naming the ID", stateserver.AcceptIDUnlock, true),
		Entry("neither", stateserver.AcceptNoForceUnlock, false),
	)
})

var _ = Describe("CosBackend locks", func() {
	var (
		ctx    context.Context
		ns     string
		bucket string
	)

	BeforeEach(func() {
		ctx, ns = newSpec()
		bucket = ns + "-1250000000"
		cosServer.CreateBucket(bucket)
		startManager(ctx, ns)
	})

	It("releases the lock only for the ID forceUnlock names", func() {
		Expect(k8sClient.Create(ctx, makeSecret("cos-credentials", ns, map[string]string{
			"secretId": cosSecretID, "secretKey": cosSecretKey,
		}))).To(Succeed())
		const lockKey = "platform/terraform.tfstate.tflock"
		cosServer.PutState(bucket, lockKey, []byte(lockJSON))
		backend := makeCosBackend("app", ns, bucket)
		backend.Spec.ForceUnlock = &backendsv1alpha1.ForceUnlockSpec{LockID: "0f6b6d2c-4a8e-4a51-9d1e-7c2b1f0e9a11"} // the JSON's UUID, not the lock ID
		Expect(k8sClient.Create(ctx, backend)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			c := expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "ForceUnlockSkipped")
			g.Expect(c.Message).To(ContainSubstring("does not match the holder"))
			g.Expect(backend.Status.Lock).NotTo(BeNil())
		}, timeout, interval).Should(Succeed())
		_, _, held := cosServer.Object(bucket, lockKey)
		Expect(held).To(BeTrue(), "a lock forceUnlock does not name is left alone")

		By("naming the lock ID status.lock shows")
		holder := backend.Status.Lock.ID
		updateSpec(ctx, backend, func() { backend.Spec.ForceUnlock.LockID = holder })
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectForceUnlocked(g, backend.Status.Conditions, backend.Status.Lock, backend.Status.LastForceUnlock, holder)
		}, timeout, interval).Should(Succeed())
		_, _, held = cosServer.Object(bucket, lockKey)
		Expect(held).To(BeFalse(), "the named lock is released")
		Eventually(func(g Gomega) []string { return eventReasons(ctx, g, ns) }, timeout, interval).Should(ContainElement("ForceUnlocked"))
	})

	It("says it cannot read a bucket whose only credentials are a role to assume, without calling COS", func() {
		before := len(cosServer.RequestLog())
		backend := makeCosBackend("app", ns, bucket)
		backend.Spec.CredentialsSecretRef = nil
		backend.Spec.AssumeRole = &backendsv1alpha1.AssumeRole{RoleArn: "qcs::cam::uin/100000000001:roleName/tfstate", SessionName: "runner"}
		Expect(k8sClient.Create(ctx, backend)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectKstatusInvariants(g, backend)
			c := expectCondition(g, backend.Status.Conditions, "BucketReady", metav1.ConditionUnknown, "AssumeRoleNotSupported")
			g.Expect(c.Message).To(ContainSubstring("does not assume roles"))
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
		}, timeout, interval).Should(Succeed())

		By("a RemoteState reading it says why it cannot")
		remote := makeRemoteState("net", ns, "CosBackend", "app")
		Expect(k8sClient.Create(ctx, remote)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, remote)
			expectKstatusInvariants(g, remote)
			c := expectCondition(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionUnknown, "AssumeRoleNotSupported")
			g.Expect(c.Message).To(ContainSubstring("does not assume roles"))
		}, timeout, interval).Should(Succeed())
		for _, r := range cosServer.RequestLog()[before:] {
			Expect(r.Bucket).NotTo(Equal(bucket), "the operator called COS: %+v", r)
		}
	})
})
