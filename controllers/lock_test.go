package controllers

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/stateserver"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// reprobe changes a backend's spec in a way that does not change what
// its probe reads, so that its next reconcile probes at once (new inputs).
func reprobe(ctx context.Context, backend backendObject) {
	GinkgoHelper()
	updateSpec(ctx, backend, func() {
		switch b := backend.(type) {
		case *backendsv1alpha1.HttpBackend:
			retries := int32(1)
			if b.Spec.RetryMax != nil && *b.Spec.RetryMax == 1 {
				retries = 0
			}
			b.Spec.RetryMax = &retries
		case *backendsv1alpha1.CosBackend:
			b.Spec.Encrypt = new(b.Spec.Encrypt == nil || !*b.Spec.Encrypt)
		}
	})
}

// peekLock returns the holder of the lock a state server holds at
// address, as its conflict answer tells it, nil when it holds none. It
// peeks by taking the lock, and releases it when it was free.
func peekLock(ctx context.Context, address string, basicAuth bool) *stateclient.LockInfo {
	GinkgoHelper()
	sc := lockingClient(address, basicAuth)
	info := stateclient.NewLockInfo("OperationTypeInvalid", "test")
	_, err := sc.Lock(ctx, info)
	if err == nil {
		Expect(sc.Unlock(ctx, info.ID)).To(Succeed())
		return nil
	}
	Expect(err).To(BeAssignableToTypeOf(&stateclient.LockError{}), "the lock attempt failed")
	lockErr, _ := errors.AsType[*stateclient.LockError](err) // it is one: asserted above
	Expect(lockErr.Info).NotTo(BeNil(), "the conflict answer names no holder")
	return lockErr.Info
}

// lockHolder returns the ID of the lock a state server holds at address,
// "" when it holds none.
func lockHolder(ctx context.Context, address string, basicAuth bool) string {
	GinkgoHelper()
	if holder := peekLock(ctx, address, basicAuth); holder != nil {
		return holder.ID
	}
	return ""
}

var _ = Describe("Locks", func() {
	spec := eachSpecWithManager()
	BeforeEach(func() { createPassword(spec.ctx, spec.ns) })

	// failLockRequests makes the state server answer method requests for the
	// spec's state with status until the spec ends.
	failLockRequests := func(method string, status int) {
		stateServer.InjectFault(stateserver.Fault{Method: method, Path: "/state/" + spec.ns, Status: status})
		DeferCleanup(stateServer.ClearFaults)
	}

	// createLockChecked creates the HttpBackend "app" of the spec's state,
	// checking its lock with a single attempt.
	createLockChecked := func() *backendsv1alpha1.HttpBackend {
		backend := makeStateBackend("app", spec.ns).Locks().LockCheck().Retries(0, 1, 1).Obj()
		create(spec.ctx, backend)
		return backend
	}

	It("reports a failed lock check as Unknown, keeping the last holder, and never as a release", func() {
		ctx, ns := spec.ctx, spec.ns
		holder := holdLock(ctx, stateURL(ns))
		backend := createLockChecked()
		eventuallyCondition(ctx, backend, "Locked", metav1.ConditionTrue, "LockHeld")

		By("the server failing the lock check")
		failLockRequests(stateserver.MethodLock, http.StatusInternalServerError)
		reprobe(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			g.Expect(backend.Status.ObservedGeneration).To(Equal(backend.Generation))
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionUnknown, "ServerError", "500")
		})
		Expect(backend.Status.Lock).NotTo(BeNil(), "the last holder seen is kept")
		Expect(backend.Status.Lock.ID).To(Equal(holder))
		Consistently(func(g Gomega) []string { return eventReasons(ctx, g, ns) }, 2*time.Second, interval).
			ShouldNot(ContainElement("LockReleased"))
	})

	It("releases, at its next probe, a lock its own check could not release", func() {
		ctx, ns := spec.ctx, spec.ns
		failLockRequests(stateserver.MethodUnlock, http.StatusBadGateway)
		backend := createLockChecked()
		eventually(ctx, backend, func(g Gomega) {
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "LockCheckNotReleased", "operator's own lock check")
			g.Expect(backend.Status.Lock).NotTo(BeNil())
			g.Expect(backend.Status.Lock.Who).To(Equal("backend-operator lock check of HttpBackend " + ns + "/app"))
		})
		Expect(lockHolder(ctx, stateURL(ns), true)).To(Equal(backend.Status.Lock.ID), "the server holds the check's lock")

		By("the server answering again")
		stateServer.ClearFaults()
		reprobe(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			g.Expect(backend.Status.ObservedGeneration).To(Equal(backend.Generation))
			expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionFalse, "NotLocked")
			g.Expect(backend.Status.Lock).To(BeNil())
		})
		Expect(lockHolder(ctx, stateURL(ns), true)).To(BeEmpty(), "the check's lock is released")
	})

	// Created while the lock is held, so before the backend could learn
	// its server: the holder's LockInfo, as the conflict carried it,
	// releases it on each.
	DescribeTable("force unlock releases the named lock on servers that accept different UNLOCK bodies",
		func(accept stateserver.UnlockBodies) {
			ctx, ns := spec.ctx, spec.ns
			srv := httptest.NewServer(stateserver.New(stateserver.NewMemoryStore(), stateserver.WithUnlockBodies(accept)))
			DeferCleanup(srv.Close)
			address := srv.URL + "/state/app"
			holder := holdLockAs(ctx, address, false, "alice@laptop")
			backend := builders.MakeHttpBackend("app", ns, address).Locks().LockCheck().ForceUnlock(holder).Obj()
			create(ctx, backend)
			eventuallyForceUnlocked(ctx, backend, holder)
			Expect(lockHolder(ctx, address, false)).To(BeEmpty())
		},
		Entry("any body", stateserver.AcceptAnyUnlock),
		Entry("only Terraform's empty body", stateserver.AcceptEmptyUnlock),
		Entry("only a body naming the ID", stateserver.AcceptIDUnlock),
		Entry("only the exact LockInfo", stateserver.AcceptNoForceUnlock),
	)
})

var _ = Describe("CosBackend locks", func() {
	spec := eachSpecWithManager()
	BeforeEach(func() { cosServer.CreateBucket(cosBucket(spec.ns)) })

	It("releases the lock only for the ID forceUnlock names", func() {
		ctx, ns, bucket := spec.ctx, spec.ns, cosBucket(spec.ns)
		const lockKey = "platform/terraform.tfstate.tflock"
		cosServer.PutState(bucket, lockKey, []byte(lockJSON))
		backend := makeCosStateBackend("app", ns, bucket).ForceUnlock("0f6b6d2c-4a8e-4a51-9d1e-7c2b1f0e9a11").Obj() // the JSON's UUID, not the lock ID
		create(ctx, cosCredentials(ns), backend)
		eventually(ctx, backend, func(g Gomega) {
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "ForceUnlockSkipped", "does not match the holder")
			g.Expect(backend.Status.Lock).NotTo(BeNil())
		})
		_, _, held := cosServer.Object(bucket, lockKey)
		Expect(held).To(BeTrue(), "a lock forceUnlock does not name is left alone")

		By("naming the lock ID status.lock shows")
		holder := backend.Status.Lock.ID
		updateSpec(ctx, backend, func() { backend.Spec.ForceUnlock.LockID = holder })
		eventuallyForceUnlocked(ctx, backend, holder)
		_, _, held = cosServer.Object(bucket, lockKey)
		Expect(held).To(BeFalse(), "the named lock is released")
		eventuallyEvent(ctx, ns, "ForceUnlocked")
	})

	It("says it cannot read a bucket whose only credentials are a role to assume, without calling COS", func() {
		ctx, ns, bucket := spec.ctx, spec.ns, cosBucket(spec.ns)
		before := len(cosServer.RequestLog())
		backend := makeCosStateBackend("app", ns, bucket).Credentials("").
			AssumeRole("qcs::cam::uin/100000000001:roleName/tfstate", "runner").Obj()
		create(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			expectKstatusInvariants(g, backend)
			expectConditionSaying(g, backend.Status.Conditions, "BucketReady", metav1.ConditionUnknown, "AssumeRoleNotSupported", "does not assume roles")
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
		})

		By("a RemoteState reading it stalls, saying why it cannot")
		remote := builders.MakeRemoteState("net", ns, "CosBackend", "app").Obj()
		create(ctx, remote)
		eventually(ctx, remote, func(g Gomega) {
			expectKstatusInvariants(g, remote)
			expectConditionSaying(g, remote.Status.Conditions, "Stalled", metav1.ConditionTrue, "AssumeRoleNotSupported", "does not assume roles")
			expectConditionSaying(g, remote.Status.Conditions, "Ready", metav1.ConditionFalse, "AssumeRoleNotSupported", "credentialsSecretRef")
		})
		for _, r := range cosServer.RequestLog()[before:] {
			Expect(r.Bucket).NotTo(Equal(bucket), "the operator called COS: %+v", r)
		}
	})
})
