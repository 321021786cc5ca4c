package controllers

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// expectCondition asserts one condition's status and reason.
func expectCondition(g Gomega, conds []metav1.Condition, condType string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	c := meta.FindStatusCondition(conds, condType)
	g.Expect(c).NotTo(BeNil(), "condition %s is missing from %v", condType, conds)
	g.Expect(c.Status).To(Equal(status), "condition %s: %s", condType, c.Message)
	g.Expect(c.Reason).To(Equal(reason), "condition %s: %s", condType, c.Message)
	return c
}

// expectConditionSaying is expectCondition with a message that contains
// every one of parts.
func expectConditionSaying(g Gomega, conds []metav1.Condition, condType string, status metav1.ConditionStatus, reason string, parts ...string) {
	c := expectCondition(g, conds, condType, status, reason)
	for _, part := range parts {
		g.Expect(c.Message).To(ContainSubstring(part))
	}
}

// expectKstatusInvariants checks the kstatus invariants of obj (see
// kstatusViolations).
func expectKstatusInvariants(g Gomega, obj statusObject) {
	g.Expect(kstatusViolations(*obj.StatusConditions(), obj.GetGeneration(), *obj.StatusObservedGeneration())).To(BeEmpty())
}

// kstatusViolations returns how conds and observed break what
// kstatus-aware tools rely on: Ready is always present, Reconciling and
// Stalled are never both True, and the observed generation never runs
// ahead of the generation. It is empty when they hold.
func kstatusViolations(conds []metav1.Condition, generation, observed int64) []string {
	var out []string
	if meta.FindStatusCondition(conds, backendsv1alpha1.ReadyCondition) == nil {
		out = append(out, fmt.Sprintf("no Ready condition in %v", conds))
	}
	if meta.IsStatusConditionTrue(conds, backendsv1alpha1.ReconcilingCondition) && meta.IsStatusConditionTrue(conds, backendsv1alpha1.StalledCondition) {
		out = append(out, fmt.Sprintf("Reconciling and Stalled both True in %v", conds))
	}
	if observed > generation {
		out = append(out, fmt.Sprintf("observedGeneration %d is ahead of generation %d", observed, generation))
	}
	return out
}

// eventuallyForceUnlocked waits until backend's status says the
// controller released lock holder for forceUnlock.
func eventuallyForceUnlocked(ctx context.Context, backend backendObject, holder string) {
	GinkgoHelper()
	eventually(ctx, backend, func(g Gomega) {
		status := backend.SharedStatus()
		expectCondition(g, status.Conditions, "Locked", metav1.ConditionFalse, "ForceUnlocked")
		g.Expect(status.Lock).To(BeNil())
		g.Expect(status.LastForceUnlock).NotTo(BeNil())
		g.Expect(status.LastForceUnlock.LockID).To(Equal(holder))
	})
}

// eventuallyEvent waits until an event of reason is recorded in namespace.
func eventuallyEvent(ctx context.Context, namespace, reason string) {
	GinkgoHelper()
	Eventually(func(g Gomega) []string { return eventReasons(ctx, g, namespace) }, timeout, interval).Should(ContainElement(reason))
}

// expectRecovered asserts that backend is Ready and no longer Stalled, and
// renders password in its credentials Secret.
func expectRecovered(ctx context.Context, g Gomega, backend *backendsv1alpha1.HttpBackend, password string) {
	expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
	g.Expect(backend.Status.Conditions).NotTo(ContainElement(HaveField("Type", "Stalled")))
	g.Expect(renderedSecret(ctx, g, backend.Namespace, backend.Name+"-backend-credentials").Data).
		To(HaveKeyWithValue("TF_HTTP_PASSWORD", []byte(password)))
}

// expectExplained creates obj and waits until condition condType has
// status and reason and a message containing each of message, and
// Ready, False or Unknown as readyStatus says, the same reason and
// message; the kstatus invariants hold throughout.
func expectExplained(ctx context.Context, obj statusObject, condType string, status metav1.ConditionStatus, reason string, message ...string) {
	GinkgoHelper()
	create(ctx, obj)
	eventually(ctx, obj, func(g Gomega) {
		expectKstatusInvariants(g, obj)
		expectConditionSaying(g, *obj.StatusConditions(), condType, status, reason, message...)
		expectConditionSaying(g, *obj.StatusConditions(), "Ready", readyStatus(status), reason, message...)
	})
}

// readyStatus is Ready's status when a condition of the given status
// explains it: Unknown stays Unknown, everything else makes Ready False.
func readyStatus(s metav1.ConditionStatus) metav1.ConditionStatus {
	if s == metav1.ConditionUnknown {
		return metav1.ConditionUnknown
	}
	return metav1.ConditionFalse
}

// create creates every object, in order.
func create(ctx context.Context, objs ...client.Object) {
	GinkgoHelper()
	for _, obj := range objs {
		Expect(k8sClient.Create(ctx, obj)).To(Succeed())
	}
}

// eventually reads obj fresh until check passes on it, within the suite's
// timeout.
func eventually(ctx context.Context, obj client.Object, check func(g Gomega)) {
	GinkgoHelper()
	eventuallyWithin(ctx, timeout, obj, check)
}

// eventuallyWithin is eventually within d.
func eventuallyWithin(ctx context.Context, d time.Duration, obj client.Object, check func(g Gomega)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		getObject(ctx, g, obj)
		check(g)
	}, d, interval).Should(Succeed())
}

// eventuallyCondition waits until obj has condition condType with status
// and reason.
func eventuallyCondition(ctx context.Context, obj statusObject, condType string, status metav1.ConditionStatus, reason string) {
	GinkgoHelper()
	eventually(ctx, obj, func(g Gomega) { expectCondition(g, *obj.StatusConditions(), condType, status, reason) })
}

// eventuallyReady waits until obj is Ready.
func eventuallyReady(ctx context.Context, obj statusObject) {
	GinkgoHelper()
	eventuallyCondition(ctx, obj, "Ready", metav1.ConditionTrue, "Succeeded")
}

// updateSpec reads obj fresh, changes it as mutate does, and writes the
// change as a merge patch: the manager writes the status meanwhile, which
// an update of the whole object would conflict with.
func updateSpec(ctx context.Context, obj client.Object, mutate func()) {
	GinkgoHelper()
	getObject(ctx, Default, obj)
	before := obj.DeepCopyObject().(client.Object)
	mutate()
	Expect(k8sClient.Patch(ctx, obj, client.MergeFrom(before))).To(Succeed())
}

// getObject reads obj fresh from the API server.
func getObject(ctx context.Context, g Gomega, obj client.Object) {
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
}

// renderedConfigMap and renderedSecret read the rendered objects.
func renderedConfigMap(ctx context.Context, g Gomega, namespace, name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, cm)).To(Succeed())
	return cm
}

func renderedSecret(ctx context.Context, g Gomega, namespace, name string) *corev1.Secret {
	s := &corev1.Secret{}
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, s)).To(Succeed())
	return s
}

// expectControlledBy asserts the controller owner reference garbage
// collection relies on (envtest has no garbage collector to observe).
func expectControlledBy(g Gomega, obj, owner client.Object, kind string) {
	ref := metav1.GetControllerOf(obj)
	g.Expect(ref).NotTo(BeNil(), "%s has no controller reference", obj.GetName())
	g.Expect(ref.Kind).To(Equal(kind))
	g.Expect(ref.Name).To(Equal(owner.GetName()))
	g.Expect(ref.UID).To(Equal(owner.GetUID()))
	g.Expect(ref.BlockOwnerDeletion).To(HaveValue(BeTrue()))
	g.Expect(obj.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "backend-operator"))
	ownerLabel := "backends.infrastate.io/backend"
	if kind == "RemoteState" {
		ownerLabel = "backends.infrastate.io/remote-state"
	}
	g.Expect(obj.GetLabels()).To(HaveKeyWithValue(ownerLabel, owner.GetName()))
}

// expectNoEvent asserts that no event of reason is recorded in namespace.
func expectNoEvent(ctx context.Context, namespace, reason string) {
	GinkgoHelper()
	Expect(eventReasons(ctx, Default, namespace)).NotTo(ContainElement(reason))
}
