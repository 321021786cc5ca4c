package controllers

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// lockTarget is a backend of one kind whose lock the StateLock specs
// hold, with the means to play another holder on its real server.
type lockTarget struct {
	kind string
	// setup creates the backend "app" of namespace and what it references.
	setup func(ctx context.Context, ns string) backendObject
	// holdForeign takes the lock as a run would and returns its ID as the
	// backend reports it; releaseForeign releases it.
	holdForeign    func(ctx context.Context, ns string) string
	releaseForeign func(ctx context.Context, ns, id string)
	// holder is the lock's holder on the server, nil when it is free.
	holder func(ctx context.Context, ns string) *stateclient.LockInfo
}

// stateLockWait is how long a deleted StateLock of these specs keeps
// trying to release its lock.
const stateLockWait = 3 * time.Second

// followWithin is how soon a backend's lock status follows its StateLock:
// within seconds, far below any probe interval of these specs.
const followWithin = 10 * time.Second

var lockTargets = []lockTarget{
	{
		kind: "HttpBackend",
		setup: func(ctx context.Context, ns string) backendObject {
			createPassword(ctx, ns)
			backend := makeStateBackend("app", ns).Locks().LockCheck().Obj()
			create(ctx, backend)
			return backend
		},
		holdForeign: func(ctx context.Context, ns string) string { return holdLock(ctx, stateURL(ns)) },
		releaseForeign: func(ctx context.Context, ns, id string) {
			Expect(lockingClient(stateURL(ns), true).ForceUnlock(ctx, id)).To(Succeed())
		},
		holder: func(ctx context.Context, ns string) *stateclient.LockInfo {
			return peekLock(ctx, stateURL(ns), true)
		},
	},
	{
		kind: "CosBackend",
		setup: func(ctx context.Context, ns string) backendObject {
			create(ctx, cosCredentials(ns))
			cosServer.CreateBucket(cosBucket(ns))
			backend := makeCosStateBackend("app", ns, cosBucket(ns)).Obj()
			create(ctx, backend)
			return backend
		},
		holdForeign: func(_ context.Context, ns string) string {
			cosServer.PutState(cosBucket(ns), cosLockKey, []byte(lockJSON))
			_, meta, _ := cosServer.Object(cosBucket(ns), cosLockKey)
			return meta["x-cos-meta-md5"]
		},
		releaseForeign: func(_ context.Context, ns, _ string) { cosServer.DeleteObject(cosBucket(ns), cosLockKey) },
		holder: func(_ context.Context, ns string) *stateclient.LockInfo {
			data, _, ok := cosServer.Object(cosBucket(ns), cosLockKey)
			if !ok {
				return nil
			}
			var info stateclient.LockInfo
			Expect(json.Unmarshal(data, &info)).To(Succeed())
			return &info
		},
	},
}

// cosLockKey is the lock object of makeCosStateBackend's default workspace.
const cosLockKey = "platform/terraform.tfstate.tflock"

// makeFreeze starts the StateLock "freeze" of the backend "app" of kind,
// which the specs' setup creates.
func makeFreeze(ns, kind string) *builders.StateLockWrapper {
	return builders.MakeStateLock("freeze", ns, kind, "app").Reason("Release freeze until Monday")
}

// eventuallyHeld waits until sl holds its lock, and returns its ID.
func eventuallyHeld(ctx context.Context, sl *backendsv1alpha1.StateLock) string {
	GinkgoHelper()
	eventually(ctx, sl, func(g Gomega) {
		expectCondition(g, sl.Status.Conditions, "Ready", metav1.ConditionTrue, backendsv1alpha1.LockAcquiredReason)
		expectCondition(g, sl.Status.Conditions, "Locked", metav1.ConditionTrue, backendsv1alpha1.LockAcquiredReason)
		g.Expect(sl.Status.LockID).NotTo(BeEmpty())
		expectKstatusInvariants(g, sl)
	})
	return sl.Status.LockID
}

// eventuallyGone waits until obj no longer exists.
func eventuallyGone(ctx context.Context, obj client.Object) {
	GinkgoHelper()
	Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	}, timeout, interval).Should(BeTrue())
}

var _ = Describe("StateLock", func() {
	spec := eachSpecWithManager(WithLockReleaseWait(stateLockWait))

	for _, target := range lockTargets {
		Context("of a "+target.kind, func() {
			It("holds the lock with its own LockInfo, shown by the backend, and releases it when deleted", func() {
				ctx, ns := spec.ctx, spec.ns
				backend := target.setup(ctx, ns)
				sl := makeFreeze(ns, target.kind).Obj()
				create(ctx, sl)
				id := eventuallyHeld(ctx, sl)

				By("the server holding the StateLock's LockInfo")
				holder := target.holder(ctx, ns)
				Expect(holder).NotTo(BeNil())
				Expect(holder.Who).To(Equal("backend-operator/" + ns + "/freeze"))
				Expect(holder.Info).To(Equal("Release freeze until Monday"))
				Expect(sl.Status.HeldSince).NotTo(BeNil())
				Expect(holder.Created.Equal(sl.Status.HeldSince.Time)).To(BeTrue(), "Created %s, heldSince %s", holder.Created, sl.Status.HeldSince)
				Expect(sl.Finalizers).To(ContainElement(backendsv1alpha1.StateLockFinalizer))
				eventuallyEvent(ctx, ns, backendsv1alpha1.LockAcquiredReason)

				By("the backend showing the StateLock as the holder within seconds, not at its next probe")
				eventuallyWithin(ctx, followWithin, backend, func(g Gomega) {
					lock := backend.SharedStatus().Lock
					g.Expect(lock).NotTo(BeNil())
					g.Expect(lock.ID).To(Equal(id))
					g.Expect(lock.Who).To(Equal("backend-operator/" + ns + "/freeze"))
					expectCondition(g, backend.SharedStatus().Conditions, "Locked", metav1.ConditionTrue, backendsv1alpha1.LockHeldReason)
					g.Expect(backend.SharedStatus().Locked).To(Equal("True"))
				})

				By("deleting the StateLock")
				Expect(k8sClient.Delete(ctx, sl)).To(Succeed())
				eventuallyGone(ctx, sl)
				// The release makes the backend's lock check due at once: the
				// lock it takes to learn the holder, and releases at once, may
				// be met on the way.
				Eventually(func() *stateclient.LockInfo { return target.holder(ctx, ns) }, timeout, interval).Should(BeNil(), "the lock was released")
				eventuallyEvent(ctx, ns, backendsv1alpha1.LockReleasedReason)
				eventuallyWithin(ctx, followWithin, backend, func(g Gomega) {
					expectCondition(g, backend.SharedStatus().Conditions, "Locked", metav1.ConditionFalse, backendsv1alpha1.NotLockedReason)
					g.Expect(backend.SharedStatus().Lock).To(BeNil())
					g.Expect(backend.SharedStatus().Locked).To(Equal("False"))
					g.Expect(backend.GetFinalizers()).NotTo(ContainElement(backendsv1alpha1.BackendProtectionFinalizer),
						"no StateLock names the backend any more")
				})
			})

			It("waits behind another holder, never forcing it, and takes the lock once it is free", func() {
				ctx, ns := spec.ctx, spec.ns
				target.setup(ctx, ns)
				foreign := target.holdForeign(ctx, ns)
				sl := makeFreeze(ns, target.kind).Obj()
				create(ctx, sl)
				eventually(ctx, sl, func(g Gomega) {
					expectCondition(g, sl.Status.Conditions, "Ready", metav1.ConditionFalse, backendsv1alpha1.WaitingForLockReason)
					expectCondition(g, sl.Status.Conditions, "Reconciling", metav1.ConditionTrue, backendsv1alpha1.WaitingForLockReason)
					g.Expect(sl.Status.Holder).NotTo(BeNil())
					g.Expect(sl.Status.Holder.ID).To(Equal(foreign))
					g.Expect(sl.Status.LockID).To(BeEmpty())
					expectKstatusInvariants(g, sl)
				})
				Consistently(func() string { return target.holder(ctx, ns).Who }, 3*time.Second, 500*time.Millisecond).
					ShouldNot(ContainSubstring("backend-operator"), "the foreign lock is never forced")

				By("the other holder releasing the lock")
				target.releaseForeign(ctx, ns, foreign)
				id := eventuallyHeld(ctx, sl)
				Expect(id).NotTo(Equal(foreign))
				Expect(sl.Status.Holder).To(BeNil())
			})

			It("reports LockLost after a force unlock of its lock, and takes it again only when asked", func() {
				ctx, ns := spec.ctx, spec.ns
				backend := target.setup(ctx, ns)
				sl := makeFreeze(ns, target.kind).Obj()
				create(ctx, sl)
				id := eventuallyHeld(ctx, sl)

				By("the backend's forceUnlock naming the StateLock's lock")
				updateSpec(ctx, backend, func() { setForceUnlock(backend, id) })
				// Locked reads ForceUnlocked only until the backend follows
				// the StateLock that lost the lock, within seconds: the
				// release is recorded in lastForceUnlock and its event.
				eventually(ctx, backend, func(g Gomega) {
					g.Expect(backend.SharedStatus().LastForceUnlock).To(HaveField("LockID", id))
				})
				eventuallyEvent(ctx, ns, backendsv1alpha1.ForceUnlockedReason)
				eventually(ctx, sl, func(g Gomega) {
					expectCondition(g, sl.Status.Conditions, "Ready", metav1.ConditionFalse, backendsv1alpha1.LockLostReason)
					expectCondition(g, sl.Status.Conditions, "Stalled", metav1.ConditionTrue, backendsv1alpha1.LockLostReason)
					g.Expect(sl.Status.LockID).To(BeEmpty())
					expectKstatusInvariants(g, sl)
				})
				eventuallyEvent(ctx, ns, backendsv1alpha1.LockLostReason)
				Consistently(func() *stateclient.LockInfo { return target.holder(ctx, ns) }, 3*time.Second, 500*time.Millisecond).
					Should(BeNil(), "a lost lock is not taken again silently")

				By("the reacquire annotation")
				updateSpec(ctx, sl, func() { sl.Annotations = map[string]string{backendsv1alpha1.ReacquireAnnotation: "1"} })
				again := eventuallyHeld(ctx, sl)
				Expect(again).NotTo(Equal(id))
				Expect(target.holder(ctx, ns)).NotTo(BeNil())
			})

			It("releases the lock when until passes, keeping the object", func() {
				ctx, ns := spec.ctx, spec.ns
				target.setup(ctx, ns)
				// Long enough for the lock to be taken first on a busy machine:
				// the backend learns how its server locks before the StateLock
				// takes its lock.
				sl := makeFreeze(ns, target.kind).Until(time.Now().Add(10 * time.Second)).Obj()
				create(ctx, sl)
				id := eventuallyHeld(ctx, sl)
				eventually(ctx, sl, func(g Gomega) {
					expectConditionSaying(g, sl.Status.Conditions, "Ready", metav1.ConditionTrue, backendsv1alpha1.ExpiredReason, "released lock "+id)
					g.Expect(sl.Status.LockID).To(BeEmpty())
					g.Expect(apimeta.FindStatusCondition(sl.Status.Conditions, "Stalled")).To(BeNil())
					expectKstatusInvariants(g, sl)
				})
				// The StateLock's lock is gone at once. The release makes the
				// backend's lock check due, which takes and at once releases
				// a lock of its own: that one may be held for a moment.
				if h := target.holder(ctx, ns); h != nil {
					Expect(h.ID).NotTo(Equal(id), "the StateLock's lock is still held")
				}
				Eventually(func() *stateclient.LockInfo { return target.holder(ctx, ns) }, timeout, interval).Should(BeNil(), "the lock was released")
				eventuallyEvent(ctx, ns, backendsv1alpha1.ExpiredReason)
			})

			It("holds the deletion of its backend until it has released the lock through it", func() {
				ctx, ns := spec.ctx, spec.ns
				backend := target.setup(ctx, ns)
				sl := makeFreeze(ns, target.kind).Obj()
				create(ctx, sl)
				id := eventuallyHeld(ctx, sl)
				getObject(ctx, Default, backend)
				Expect(backend.GetFinalizers()).To(ContainElement(backendsv1alpha1.BackendProtectionFinalizer))

				By("deleting the backend: it waits, saying for which StateLock and what to do")
				Expect(k8sClient.Delete(ctx, backend)).To(Succeed())
				eventually(ctx, backend, func(g Gomega) {
					expectConditionSaying(g, backend.SharedStatus().Conditions, "Ready", metav1.ConditionFalse, backendsv1alpha1.InUseReason,
						"StateLock freeze (holds lock "+id+")")
					expectConditionSaying(g, backend.SharedStatus().Conditions, "Ready", metav1.ConditionFalse, backendsv1alpha1.InUseReason,
						"kubectl delete statelock -n "+ns+" freeze")
				})
				eventuallyEvent(ctx, ns, backendsv1alpha1.InUseReason)
				Consistently(func(g Gomega) {
					getObject(ctx, g, sl)
					expectCondition(g, sl.Status.Conditions, "Ready", metav1.ConditionTrue, backendsv1alpha1.LockAcquiredReason)
					g.Expect(target.holder(ctx, ns)).NotTo(BeNil())
					g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(backend), backend)).To(Succeed())
				}, 2*time.Second, 250*time.Millisecond).Should(Succeed(), "the backend stays while its StateLock holds the lock")

				By("deleting the StateLock: it releases the lock, then both go")
				Expect(k8sClient.Delete(ctx, sl)).To(Succeed())
				eventuallyGone(ctx, sl)
				eventuallyGone(ctx, backend)
				Expect(target.holder(ctx, ns)).To(BeNil(), "the lock was released")
				eventuallyEvent(ctx, ns, backendsv1alpha1.LockReleasedReason)
				expectNoEvent(ctx, ns, backendsv1alpha1.LockNotReleasedReason)
			})

			It("releases its lock when it and its backend are deleted together", func() {
				ctx, ns := spec.ctx, spec.ns
				backend := target.setup(ctx, ns)
				sl := makeFreeze(ns, target.kind).Obj()
				create(ctx, sl)
				eventuallyHeld(ctx, sl)
				eventually(ctx, backend, func(g Gomega) {
					g.Expect(backend.GetFinalizers()).To(ContainElement(backendsv1alpha1.BackendProtectionFinalizer))
				})

				Expect(k8sClient.Delete(ctx, sl)).To(Succeed())
				Expect(k8sClient.Delete(ctx, backend)).To(Succeed())
				eventuallyGone(ctx, sl)
				eventuallyGone(ctx, backend)
				Expect(target.holder(ctx, ns)).To(BeNil(), "the lock was released")
				eventuallyEvent(ctx, ns, backendsv1alpha1.LockReleasedReason)
				expectNoEvent(ctx, ns, backendsv1alpha1.LockNotReleasedReason)
			})
		})
	}

	It("shows on an HttpBackend without a lock check the lock its StateLock holds, within seconds", func() {
		ctx, ns := spec.ctx, spec.ns
		createPassword(ctx, ns)
		backend := makeStateBackend("app", ns).Locks().Obj()
		create(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionUnknown, backendsv1alpha1.LockNotCheckedReason,
				"probe.lockCheck")
			g.Expect(backend.Status.Locked).To(Equal("Unchecked"))
		})

		sl := makeFreeze(ns, "HttpBackend").Obj()
		create(ctx, sl)
		id := eventuallyHeld(ctx, sl)
		eventuallyWithin(ctx, followWithin, backend, func(g Gomega) {
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, backendsv1alpha1.LockHeldReason,
				"held by StateLock freeze")
			g.Expect(backend.Status.Locked).To(Equal("True"))
			g.Expect(backend.Status.Lock).To(HaveField("ID", id))
		})

		Expect(k8sClient.Delete(ctx, sl)).To(Succeed())
		eventuallyGone(ctx, sl)
		eventuallyWithin(ctx, followWithin, backend, func(g Gomega) {
			expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionUnknown, backendsv1alpha1.LockNotCheckedReason)
			g.Expect(backend.Status.Locked).To(Equal("Unchecked"))
			g.Expect(backend.Status.Lock).To(BeNil())
		})
	})

	It("records a reacquire value longer than its status holds as a digest, and takes the lock again on a new one", func() {
		ctx, ns := spec.ctx, spec.ns
		backend := lockTargets[0].setup(ctx, ns)
		first, second := strings.Repeat("a", 300), strings.Repeat("b", 300)
		sl := makeFreeze(ns, lockTargets[0].kind).Annotation(backendsv1alpha1.ReacquireAnnotation, first).Obj()
		create(ctx, sl)
		id := eventuallyHeld(ctx, sl)

		By("a force unlock losing the lock: the status records it")
		updateSpec(ctx, backend, func() { setForceUnlock(backend, id) })
		eventually(ctx, sl, func(g Gomega) {
			expectCondition(g, sl.Status.Conditions, "Locked", metav1.ConditionFalse, backendsv1alpha1.LockLostReason)
			expectCondition(g, sl.Status.Conditions, "Stalled", metav1.ConditionTrue, backendsv1alpha1.LockLostReason)
			g.Expect(sl.Status.LockID).To(BeEmpty())
			g.Expect(sl.Status.ReacquireRequest).To(Equal(reacquireRecord(first)))
			g.Expect(len(sl.Status.ReacquireRequest)).To(BeNumerically("<", len(first)))
			expectKstatusInvariants(g, sl)
		})

		By("another long reacquire value")
		updateSpec(ctx, sl, func() { sl.Annotations[backendsv1alpha1.ReacquireAnnotation] = second })
		again := eventuallyHeld(ctx, sl)
		Expect(again).NotTo(Equal(id))
		Expect(sl.Status.ReacquireRequest).To(Equal(reacquireRecord(first)), "the value acted on stays recorded until the next loss")
	})

	It("stalls with LockingDisabled on an HttpBackend without lock addresses", func() {
		ctx, ns := spec.ctx, spec.ns
		createPassword(ctx, ns)
		create(ctx, makeStateBackend("app", ns).Obj())
		sl := makeFreeze(ns, "HttpBackend").Obj()
		create(ctx, sl)
		eventually(ctx, sl, func(g Gomega) {
			expectConditionSaying(g, sl.Status.Conditions, "Stalled", metav1.ConditionTrue, backendsv1alpha1.LockingDisabledReason, "lockAddress")
			expectKstatusInvariants(g, sl)
		})
		Expect(k8sClient.Delete(ctx, sl)).To(Succeed())
		eventuallyGone(ctx, sl)
	})
})

// setForceUnlock sets a backend's spec.forceUnlock.lockID.
func setForceUnlock(backend backendObject, id string) {
	f := &backendsv1alpha1.ForceUnlockSpec{LockID: id}
	switch b := backend.(type) {
	case *backendsv1alpha1.HttpBackend:
		b.Spec.ForceUnlock = f
	case *backendsv1alpha1.CosBackend:
		b.Spec.ForceUnlock = f
	}
}
