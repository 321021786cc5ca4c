package controllers

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// offsetClock is the real clock moved on by the steps a spec takes: the
// manager runs in real time, and a spec skips a grace period (at least
// 30s, as the API allows) with one step.
type offsetClock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now is the real time plus the steps taken.
func (c *offsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Since is the time from t to Now.
func (c *offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// step moves the clock on by d.
func (c *offsetClock) step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// specGrace is the grace period of the specs' lockPolicy: the shortest
// the API allows.
const specGrace = 30 * time.Second

// specRunner is the runner pod of the specs.
const specRunner = "runner-1"

// createRunnerPod creates the Pod specRunner in ns and moves it to
// Running through the status subresource, as a kubelet would (envtest
// runs none).
func createRunnerPod(ctx context.Context, ns string) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: specRunner, Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "terraform", Image: "hashicorp/terraform:1.9"}}},
	}
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	pod.Status.Phase = corev1.PodRunning
	Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
	return pod
}

// setRunnerPhase moves pod to phase through the status subresource, as a
// kubelet would; when finished is not zero, its container terminated
// then.
func setRunnerPhase(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase, finished time.Time) {
	GinkgoHelper()
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
	pod.Status.Phase = phase
	if !finished.IsZero() {
		c := pod.Spec.Containers[0]
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.NewTime(finished)}}}}
	}
	Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
}

// awaitRunStart waits until pod has existed for holderClockSkew, as the
// API server counts it (to the second): a lock taken after that can have
// been taken in it.
func awaitRunStart(pod *corev1.Pod) {
	time.Sleep(time.Until(pod.CreationTimestamp.Add(holderClockSkew)))
}

// holdLockFromPod takes the lock of the state at address as a Terraform
// run in the Pod pod would (Who is runner@<pod>), and returns its ID.
func holdLockFromPod(ctx context.Context, address, pod string) string {
	GinkgoHelper()
	return holdLockAs(ctx, address, true, "runner@"+pod)
}

// holdLockOnceRunning takes the lock of the state at address as a
// Terraform run in pod would, once it has started (see awaitRunStart), and
// moves clock on by holderClockSkew, so that a probe sees the Pod run
// after the lock was taken, as the evidence of its holder requires. It
// returns the lock's ID.
func holdLockOnceRunning(ctx context.Context, address string, pod *corev1.Pod, clock *offsetClock) string {
	GinkgoHelper()
	awaitRunStart(pod)
	id := holdLockFromPod(ctx, address, pod.Name)
	clock.step(holderClockSkew)
	return id
}

// createPolicyBackend creates the HttpBackend "app" of the spec's state,
// checking its lock every 10s and releasing gone holders after
// specGrace.
func createPolicyBackend(ctx context.Context, ns string) *backendsv1alpha1.HttpBackend {
	GinkgoHelper()
	backend := makeStateBackend("app", ns).Locks().LockCheck().ProbeInterval(10 * time.Second).
		LockPolicy(backendsv1alpha1.LockPolicy{ReleaseWhenHolderGone: true, GracePeriod: &metav1.Duration{Duration: specGrace}}).Obj()
	create(ctx, backend)
	return backend
}

// expectStillHeld checks, for a few seconds, that the state at address
// is held by id and that no holder was released.
func expectStillHeld(ctx context.Context, ns, address, id string) {
	GinkgoHelper()
	Consistently(func(g Gomega) {
		g.Expect(lockHolder(ctx, address, true)).To(Equal(id))
		g.Expect(eventReasons(ctx, g, ns)).NotTo(ContainElement("HolderGoneReleased"))
	}, 3*time.Second, 500*time.Millisecond).Should(Succeed())
}

var _ = Describe("Lock policy", func() {
	spec := eachSpec()
	BeforeEach(func() { createPassword(spec.ctx, spec.ns) })

	It("releases the lock of a runner pod seen running that finished, once the grace period has passed, and says so", func() {
		ctx, ns := spec.ctx, spec.ns
		clock := &offsetClock{}
		startManager(ctx, ns, withClock(clock))
		pod := createRunnerPod(ctx, ns)
		holder := holdLockOnceRunning(ctx, stateURL(ns), pod, clock)
		backend := createPolicyBackend(ctx, ns)
		eventually(ctx, backend, func(g Gomega) {
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "LockHeld", "runs in Pod runner-1 (Running)")
			g.Expect(backend.Status.HolderPod).To(Equal(&backendsv1alpha1.HolderPod{Name: "runner-1", UID: string(pod.UID), Phase: "Running"}))
		})

		By("the pod finished")
		setRunnerPhase(ctx, pod, corev1.PodSucceeded, time.Time{})
		reprobe(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "LockHeld", "ran in Pod runner-1, which has been Succeeded since")
			g.Expect(backend.Status.Lock).NotTo(BeNil())
			g.Expect(backend.Status.Lock.ID).To(Equal(holder))
			g.Expect(backend.Status.HolderPod).NotTo(BeNil())
			g.Expect(*backend.Status.HolderPod).To(And(HaveField("Name", "runner-1"), HaveField("UID", string(pod.UID)),
				HaveField("Phase", "Succeeded"), HaveField("GoneSince", Not(BeNil()))))
		})
		By("within the grace period the lock stays")
		expectStillHeld(ctx, ns, stateURL(ns), holder)

		By("past the grace period")
		clock.step(specGrace + time.Second)
		eventually(ctx, backend, func(g Gomega) {
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionFalse, "HolderGoneReleased", "Released lock "+holder, "its Pod runner-1")
			g.Expect(backend.Status.LastForceUnlock).NotTo(BeNil())
			g.Expect(backend.Status.LastForceUnlock.LockID).To(Equal(holder))
			g.Expect(backend.Status.HolderPod).To(BeNil())
			g.Expect(backend.Status.Lock).To(BeNil())
		})
		Expect(lockHolder(ctx, stateURL(ns), true)).To(BeEmpty(), "the lock is released")
		eventuallyEvent(ctx, ns, "HolderGoneReleased")
	})

	It("never releases the lock of a running pod", func() {
		ctx, ns := spec.ctx, spec.ns
		clock := &offsetClock{}
		startManager(ctx, ns, withClock(clock))
		pod := createRunnerPod(ctx, ns)
		holder := holdLockOnceRunning(ctx, stateURL(ns), pod, clock)
		backend := createPolicyBackend(ctx, ns)
		eventually(ctx, backend, func(g Gomega) {
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "LockHeld", "runs in Pod runner-1 (Running)")
			g.Expect(backend.Status.HolderPod).To(Equal(&backendsv1alpha1.HolderPod{Name: "runner-1", UID: string(pod.UID), Phase: "Running"}))
		})

		By("a day later")
		clock.step(24 * time.Hour)
		reprobe(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			g.Expect(backend.Status.ObservedGeneration).To(Equal(backend.Generation))
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "LockHeld", "held for over 1d")
		})
		Expect(backend.Status.HolderPod).To(Equal(&backendsv1alpha1.HolderPod{Name: "runner-1", UID: string(pod.UID), Phase: "Running"}))
		expectStillHeld(ctx, ns, stateURL(ns), holder)
	})

	It("never releases a lock whose hostname names no pod it saw", func() {
		ctx, ns := spec.ctx, spec.ns
		clock := &offsetClock{}
		startManager(ctx, ns, withClock(clock))
		holder := holdLockFromPod(ctx, stateURL(ns), "runner-deleted-before-any-probe")
		backend := createPolicyBackend(ctx, ns)
		eventually(ctx, backend, func(g Gomega) {
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "LockHeld",
				"hostname runner-deleted-before-any-probe names no Pod of this namespace that the operator saw")
			g.Expect(backend.Status.HolderPod).To(BeNil())
		})

		By("an hour later")
		clock.step(time.Hour)
		reprobe(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			g.Expect(backend.Status.ObservedGeneration).To(Equal(backend.Generation))
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "LockHeld", "names no Pod")
		})
		Expect(backend.Status.HolderPod).To(BeNil())
		expectStillHeld(ctx, ns, stateURL(ns), holder)
	})

	It("releases nothing when another took the lock between its read and the release", func() {
		ctx, ns := spec.ctx, spec.ns
		clock := &offsetClock{}
		writes := startManager(ctx, ns, withClock(clock))
		pod := createRunnerPod(ctx, ns)
		first := holdLockOnceRunning(ctx, stateURL(ns), pod, clock)
		backend := createPolicyBackend(ctx, ns)
		eventually(ctx, backend, func(g Gomega) {
			g.Expect(backend.Status.HolderPod).To(Equal(&backendsv1alpha1.HolderPod{Name: "runner-1", UID: string(pod.UID), Phase: "Running"}))
		})
		setRunnerPhase(ctx, pod, corev1.PodFailed, time.Time{})
		reprobe(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			g.Expect(backend.Status.HolderPod).NotTo(BeNil())
			g.Expect(backend.Status.HolderPod.GoneSince).NotTo(BeNil())
		})

		By("another run taking the lock as the probe reads the pod: after the probe read the holder, before it releases it")
		var armed atomic.Bool
		var second, takeoverErr atomic.Value
		podPath := "/api/v1/namespaces/" + ns + "/pods/" + pod.Name
		writes.answerWith(func(req *http.Request) *http.Response {
			if req.Method != http.MethodGet || req.URL.Path != podPath || !armed.CompareAndSwap(true, false) {
				return nil
			}
			// This runs in the manager's request, not in the spec: no
			// assertion here, the spec checks what it stored.
			sc := lockingClient(stateURL(ns), true)
			if err := sc.Unlock(req.Context(), first); err != nil {
				takeoverErr.Store(err)
				return nil
			}
			id, err := sc.Lock(req.Context(), stateclient.NewLockInfo("OperationTypeApply", "runner@runner-2"))
			if err != nil {
				takeoverErr.Store(err)
				return nil
			}
			second.Store(id)
			return nil
		})
		armed.Store(true)
		clock.step(specGrace + time.Second)
		reprobe(ctx, backend)
		Eventually(armed.Load, timeout, interval).Should(BeFalse(), "the probe read the pod")
		Expect(takeoverErr.Load()).To(BeNil(), "the other run took the lock")
		eventually(ctx, backend, func(g Gomega) {
			g.Expect(backend.Status.ObservedGeneration).To(Equal(backend.Generation))
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "ServerError",
				"The release (its holder's Pod is gone) of "+first+" failed")
			g.Expect(backend.Status.LastForceUnlock).To(BeNil())
		})
		newHolder, _ := second.Load().(string)
		Expect(newHolder).NotTo(BeEmpty())
		Expect(lockHolder(ctx, stateURL(ns), true)).To(Equal(newHolder), "the new holder still holds the lock")

		By("the next probe sees the new holder, whose hostname names no pod")
		eventually(ctx, backend, func(g Gomega) {
			g.Expect(backend.Status.Lock).NotTo(BeNil())
			g.Expect(backend.Status.Lock.ID).To(Equal(newHolder))
			g.Expect(backend.Status.HolderPod).To(BeNil())
		})
		Expect(eventReasons(ctx, Default, ns)).NotTo(ContainElement("HolderGoneReleased"))
	})
})

var _ = Describe("CosBackend lock policy", func() {
	spec := eachSpec()
	BeforeEach(func() { cosServer.CreateBucket(cosBucket(spec.ns)) })

	It("releases the lock of a runner pod that is gone once the grace period has passed", func() {
		ctx, ns, bucket := spec.ctx, spec.ns, cosBucket(spec.ns)
		clock := &offsetClock{}
		startManager(ctx, ns, withClock(clock))
		pod := createRunnerPod(ctx, ns)
		const lockKey = "platform/terraform.tfstate.tflock"
		awaitRunStart(pod)
		lock := strings.Replace(lockJSON, `"Who":"bob@ci"`, `"Who":"runner@runner-1"`, 1)
		lock = strings.Replace(lock, "2026-01-02T03:04:05.123456789Z", time.Now().UTC().Format(time.RFC3339Nano), 1)
		cosServer.PutState(bucket, lockKey, []byte(lock))
		clock.step(holderClockSkew)
		backend := makeCosStateBackend("app", ns, bucket).ProbeInterval(10 * time.Second).
			LockPolicy(backendsv1alpha1.LockPolicy{ReleaseWhenHolderGone: true, GracePeriod: &metav1.Duration{Duration: specGrace}}).Obj()
		create(ctx, cosCredentials(ns), backend)
		eventually(ctx, backend, func(g Gomega) {
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "LockHeld", "runs in Pod runner-1 (Running)")
		})

		By("the pod deleted")
		Expect(k8sClient.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
		eventually(ctx, backend, func(g Gomega) {
			g.Expect(backend.Status.HolderPod).NotTo(BeNil())
			g.Expect(backend.Status.HolderPod.Phase).To(Equal("Gone"))
			g.Expect(backend.Status.HolderPod.GoneSince).NotTo(BeNil())
		})
		holder := backend.Status.Lock.ID

		By("past the grace period")
		clock.step(specGrace + time.Second)
		eventually(ctx, backend, func(g Gomega) {
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionFalse, "HolderGoneReleased", "its Pod runner-1 had been gone since")
			g.Expect(backend.Status.LastForceUnlock).NotTo(BeNil())
			g.Expect(backend.Status.LastForceUnlock.LockID).To(Equal(holder))
		})
		_, _, held := cosServer.Object(bucket, lockKey)
		Expect(held).To(BeFalse(), "the lock object is deleted")
		eventuallyEvent(ctx, ns, "HolderGoneReleased")
	})
})
