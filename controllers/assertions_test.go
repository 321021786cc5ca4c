package controllers

import (
	"context"

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

// expectKstatusInvariants checks what kstatus-aware tools rely on: Ready is
// always present, Reconciling and Stalled are never both True, and the
// observed generation never runs ahead of the generation.
func expectKstatusInvariants(g Gomega, obj statusObject) {
	conds := *obj.StatusConditions()
	g.Expect(meta.FindStatusCondition(conds, "Ready")).NotTo(BeNil(), "Ready is missing")
	g.Expect(meta.IsStatusConditionTrue(conds, "Reconciling") && meta.IsStatusConditionTrue(conds, "Stalled")).
		To(BeFalse(), "Reconciling and Stalled are both True")
	g.Expect(*obj.StatusObservedGeneration()).To(BeNumerically("<=", obj.GetGeneration()))
}

// expectForceUnlocked asserts what a backend's status says once the
// controller released lock holder for forceUnlock.
func expectForceUnlocked(g Gomega, conds []metav1.Condition, lock *backendsv1alpha1.LockInfo, last *backendsv1alpha1.ForceUnlockStatus, holder string) {
	expectCondition(g, conds, "Locked", metav1.ConditionFalse, "ForceUnlocked")
	g.Expect(lock).To(BeNil())
	g.Expect(last).NotTo(BeNil())
	g.Expect(last.LockID).To(Equal(holder))
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
