package controllers

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// expectLeftAlone moves clock past the grace period, probes again, and
// checks that the lock holder holds at address is still held, with no
// holder's Pod recorded, and that the Locked message says each of parts.
func expectLeftAlone(ctx context.Context, backend *backendsv1alpha1.HttpBackend, clock *offsetClock, holder string, parts ...string) {
	GinkgoHelper()
	clock.step(specGrace + time.Second)
	reprobe(ctx, backend)
	eventually(ctx, backend, func(g Gomega) {
		g.Expect(backend.Status.ObservedGeneration).To(Equal(backend.Generation))
		g.Expect(backend.Status.Lock).NotTo(BeNil())
		g.Expect(backend.Status.Lock.ID).To(Equal(holder))
	})
	expectStillHeld(ctx, backend.Namespace, stateURL(backend.Namespace), holder)
	eventually(ctx, backend, func(g Gomega) {
		expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "LockHeld", parts...)
		g.Expect(backend.Status.HolderPod).To(BeNil())
		g.Expect(backend.Status.LastForceUnlock).To(BeNil())
	})
}

var _ = Describe("Lock policy evidence", func() {
	spec := eachSpec()
	BeforeEach(func() { createPassword(spec.ctx, spec.ns) })

	It("never releases the lock of a pod that had finished before the lock was taken", func() {
		ctx, ns := spec.ctx, spec.ns
		clock := &offsetClock{}
		startManager(ctx, ns, withClock(clock))
		pod := createRunnerPod(ctx, ns)
		awaitRunStart(pod)
		setRunnerPhase(ctx, pod, corev1.PodSucceeded, time.Now())

		By("a run elsewhere, under the finished pod's name, taking the lock 3s later")
		time.Sleep(3 * time.Second)
		holder := holdLockFromPod(ctx, stateURL(ns), pod.Name)
		clock.step(holderClockSkew)
		backend := createPolicyBackend(ctx, ns)
		eventually(ctx, backend, func(g Gomega) {
			g.Expect(backend.Status.Lock).NotTo(BeNil())
			g.Expect(backend.Status.Lock.ID).To(Equal(holder))
		})

		By("past the grace period")
		expectLeftAlone(ctx, backend, clock, holder, "Pod runner-1 finished at", "not at least 5s after the lock was taken", "cannot hold the lock",
			"lockPolicy.releaseWhenHolderGone leaves the lock alone")

		By("the pod deleted, past the grace period again")
		Expect(k8sClient.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
		expectLeftAlone(ctx, backend, clock, holder, "hostname runner-1 names no Pod of this namespace that the operator saw Running or Pending")
	})

	It("never releases a lock taken outside the cluster when a pod of its hostname is created after it, then deleted", func() {
		ctx, ns := spec.ctx, spec.ns
		clock := &offsetClock{}
		startManager(ctx, ns, withClock(clock))
		holder := holdLockAs(ctx, stateURL(ns), true, "runner@build-vm-7")
		backend := createPolicyBackend(ctx, ns)
		eventually(ctx, backend, func(g Gomega) {
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "LockHeld", "hostname build-vm-7 names no Pod")
			g.Expect(backend.Status.Lock.ID).To(Equal(holder))
		})

		By("a decoy pod of the VM's name, created after the lock was taken, running")
		decoy := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "build-vm-7", Namespace: ns},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "decoy", Image: "busybox"}}},
		}
		Expect(k8sClient.Create(ctx, decoy)).To(Succeed())
		setRunnerPhase(ctx, decoy, corev1.PodRunning, time.Time{})
		clock.step(holderClockSkew)
		reprobe(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			g.Expect(backend.Status.ObservedGeneration).To(Equal(backend.Generation))
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "LockHeld",
				"Pod build-vm-7 was created at", "not at least 5s before the lock was taken", "cannot have taken the lock")
			g.Expect(backend.Status.HolderPod).To(BeNil())
		})

		By("the decoy deleted, past the grace period")
		Expect(k8sClient.Delete(ctx, decoy, client.GracePeriodSeconds(0))).To(Succeed())
		expectLeftAlone(ctx, backend, clock, holder, "hostname build-vm-7 names no Pod of this namespace that the operator saw Running or Pending")
		Expect(eventReasons(ctx, Default, ns)).NotTo(ContainElement("HolderGoneReleased"))
	})
})
