package controllers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/owned"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/contenthash"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// apiStorageShare is each namespace's API storage share in these specs.
const apiStorageShare = 2 << 20

// withSmallAPIStorage gives the manager of a spec an API storage share of
// apiStorageShare per namespace.
func withSmallAPIStorage() Option {
	b := DefaultBudgets()
	b.APIStoragePerNamespace = apiStorageShare
	return WithBudgets(b)
}

// storedBytesIn adds up the sizes the operator recorded on the objects it
// wrote in namespace, checking each against the object's data.
func storedBytesIn(ctx context.Context, g Gomega, namespace string) int64 {
	var total int64
	count := func(obj client.Object, size int64) {
		value, ok := obj.GetAnnotations()[contenthash.StoredBytesAnnotation]
		if !ok || related.ControllerOfThisAPI(obj) == nil {
			return
		}
		g.Expect(value).To(Equal(strconv.FormatInt(size, 10)), "the size recorded on %s", obj.GetName())
		total += size
	}
	cms := &corev1.ConfigMapList{}
	g.Expect(k8sClient.List(ctx, cms, client.InNamespace(namespace))).To(Succeed())
	for i := range cms.Items {
		count(&cms.Items[i], owned.ConfigMapBytes(&cms.Items[i]))
	}
	secrets := &corev1.SecretList{}
	g.Expect(k8sClient.List(ctx, secrets, client.InNamespace(namespace))).To(Succeed())
	for i := range secrets.Items {
		count(&secrets.Items[i], owned.SecretBytes(&secrets.Items[i]))
	}
	return total
}

// apiStorageUsed is infrastate_budget_used{budget="api_storage"} of
// namespace, as the manager's registry serves it; 0 without a series.
func apiStorageUsed(g Gomega, namespace string) int64 {
	used, _ := budgetUsed(g, "api_storage", namespace)
	return int64(used)
}

// expectAPIStorageCounted checks that the budget metric of namespace
// counts exactly the sizes recorded on the objects the operator wrote
// there, within the share.
func expectAPIStorageCounted(ctx context.Context, namespace string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		stored := storedBytesIn(ctx, g, namespace)
		g.Expect(stored).To(BeNumerically("<=", apiStorageShare))
		g.Expect(apiStorageUsed(g, namespace)).To(Equal(stored))
	}, timeout, interval).Should(Succeed())
}

var _ = Describe("API storage", func() {
	It("stops a namespace's RemoteStates at its share, keeping what they published, while another namespace publishes", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		DeferCleanup(cancel)
		tenant, other := newNamespace(ctx), newNamespace(ctx)
		startManagerFor(ctx, []string{tenant, other}, withSmallAPIStorage())

		// 700 KiB of outputs each: two fit a share of 2 MiB, three do not.
		big := strings.Repeat("o", 700<<10)
		for _, ns := range []string{tenant, other} {
			createPassword(ctx, ns)
			seedState(ctx, stateURL(ns), v4State(1, fmt.Sprintf(`"big":{"value":%q,"type":"string"},"small":{"value":"s","type":"string"}`, big)))
			create(ctx, makeStateBackend("network", ns).Obj())
		}
		publish := func(ns, name, output string) *backendsv1alpha1.RemoteState {
			remote := builders.MakeRemoteState(name, ns, "HttpBackend", "network").Outputs(backendsv1alpha1.OutputSelector{Name: output}).Obj()
			create(ctx, remote)
			return remote
		}

		By("two RemoteStates publish large outputs, a third small ones")
		a, b, c := publish(tenant, "a", "big"), publish(tenant, "b", "big"), publish(tenant, "c", "small")
		for _, remote := range []*backendsv1alpha1.RemoteState{a, b, c} {
			eventuallyCondition(ctx, remote, "OutputsReady", metav1.ConditionTrue, "OutputsPublished")
		}
		published := map[string]string{}
		for _, name := range []string{"a-outputs", "b-outputs", "c-outputs"} {
			published[name] = renderedConfigMap(ctx, Default, tenant, name).ResourceVersion
		}

		By("the third asking for the large outputs too is refused, naming the share and its flag")
		updateSpec(ctx, c, func() { c.Spec.Outputs = []backendsv1alpha1.OutputSelector{{Name: "big"}} })
		eventually(ctx, c, func(g Gomega) {
			expectKstatusInvariants(g, c)
			expectConditionSaying(g, c.Status.Conditions, "OutputsReady", metav1.ConditionFalse, "BudgetExceeded",
				"namespace "+tenant+" has used its API storage share", "of 2.0 MiB (--api-storage-per-namespace)", "spec.outputs")
			expectCondition(g, c.Status.Conditions, "Ready", metav1.ConditionFalse, "BudgetExceeded")
		})

		By("what was published before stays as it was")
		Expect(renderedConfigMap(ctx, Default, tenant, "c-outputs").Data).To(Equal(map[string]string{"small": "s"}))
		for name, version := range published {
			Expect(renderedConfigMap(ctx, Default, tenant, name).ResourceVersion).To(Equal(version), "%s was written again", name)
		}
		expectAPIStorageCounted(ctx, tenant)

		By("another namespace still publishes within its own share")
		for _, name := range []string{"a", "b"} {
			remote := publish(other, name, "big")
			eventuallyCondition(ctx, remote, "OutputsReady", metav1.ConditionTrue, "OutputsPublished")
		}
		expectAPIStorageCounted(ctx, other)

		By("deleting a RemoteState and what it published, as garbage collection would, publishes the refused one at once, not at its next read")
		Expect(k8sClient.Delete(ctx, a)).To(Succeed())
		for _, obj := range []client.Object{
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "a-outputs"}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "a-outputs"}},
		} {
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, obj))).To(Succeed())
		}
		eventuallyCondition(ctx, c, "OutputsReady", metav1.ConditionTrue, "OutputsPublished")
		Expect(renderedConfigMap(ctx, Default, tenant, "c-outputs").Data).To(HaveKeyWithValue("big", big))
		expectAPIStorageCounted(ctx, tenant)
	})

	It("renders backends until the share is used, renders a refused one once bytes are given back, and holds after a restart", func() {
		ctx, ns := newSpec()
		opts := []Option{withSmallAPIStorage(), WithMaxConcurrentReconciles(4)}
		first := startManager(ctx, ns, opts...)

		// Each backend copies the 600 KiB password into its credentials
		// Secret: three fit a share of 2 MiB, four do not.
		create(ctx, builders.MakeSecret("big-password", ns).Data(map[string]string{"password": strings.Repeat("p", 600<<10)}).Obj())
		backend := func(name string) *backendsv1alpha1.HttpBackend {
			return builders.MakeHttpBackend(name, ns, stateURL(ns)).BasicAuth(stateUser, "big-password", "").ProbeInterval(0).Obj()
		}
		backends := []*backendsv1alpha1.HttpBackend{backend("app-0"), backend("app-1"), backend("app-2"), backend("app-3")}

		By("four backends reconciled at once: three render, the fourth is refused")
		create(ctx, backends[0], backends[1], backends[2], backends[3])
		var ready []*backendsv1alpha1.HttpBackend
		var refused *backendsv1alpha1.HttpBackend
		Eventually(func(g Gomega) {
			ready, refused = nil, nil
			for _, b := range backends {
				getObject(ctx, g, b)
				switch {
				case isCondition(b.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded"):
					ready = append(ready, b)
				case isCondition(b.Status.Conditions, "Stalled", metav1.ConditionTrue, "BudgetExceeded"):
					refused = b
				}
			}
			g.Expect(ready).To(HaveLen(3))
			g.Expect(refused).NotTo(BeNil())
			expectKstatusInvariants(g, refused)
			expectConditionSaying(g, refused.Status.Conditions, "Stalled", metav1.ConditionTrue, "BudgetExceeded",
				"namespace "+ns+" has used its API storage share", "(--api-storage-per-namespace)", "raise --api-storage-per-namespace")
		}, timeout, interval).Should(Succeed())
		expectNotRendered(ctx, ns, refused.Name)
		expectAPIStorageCounted(ctx, ns)

		By("deleting a backend and what it rendered, as garbage collection would, renders the refused one within seconds")
		gone := ready[0]
		Expect(k8sClient.Delete(ctx, gone)).To(Succeed())
		deleteRendered(ctx, ns, gone.Name)
		eventuallyWithin(ctx, 10*time.Second, refused, func(g Gomega) {
			expectCondition(g, refused.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			renderedSecret(ctx, g, ns, refused.Name+"-backend-credentials")
		})
		expectAPIStorageCounted(ctx, ns)

		By("a new backend fills the share again and is refused")
		late := backend("app-4")
		create(ctx, late)
		eventuallyCondition(ctx, late, "Stalled", metav1.ConditionTrue, "BudgetExceeded")
		counted := storedBytesIn(ctx, Default, ns)

		By("a new manager counts what is stored from the annotations, and keeps refusing without writing anything")
		first.stop()
		second := startManager(ctx, ns, opts...)
		Eventually(func(g Gomega) { g.Expect(apiStorageUsed(g, ns)).To(Equal(counted)) }, timeout, interval).Should(Succeed())
		Consistently(func(g Gomega) {
			getObject(ctx, g, late)
			expectCondition(g, late.Status.Conditions, "Stalled", metav1.ConditionTrue, "BudgetExceeded")
			for _, w := range second.since(0) {
				g.Expect(w).NotTo(Equal("POST /api/v1/namespaces/"+ns+"/secrets"), "the new manager created a Secret")
			}
		}, 5*time.Second, interval).Should(Succeed())
		expectNotRendered(ctx, ns, late.Name)
		Expect(storedBytesIn(ctx, Default, ns)).To(Equal(counted))
	})
})

// isCondition reports whether conds hold condType with status and reason.
func isCondition(conds []metav1.Condition, condType string, status metav1.ConditionStatus, reason string) bool {
	c := findCondition(conds, condType)
	return c != nil && c.Status == status && c.Reason == reason
}

// expectNotRendered checks that backend name of namespace has neither a
// ConfigMap nor a credentials Secret.
func expectNotRendered(ctx context.Context, namespace, name string) {
	GinkgoHelper()
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}} {
		key := types.NamespacedName{Namespace: namespace, Name: name + "-backend"}
		if _, ok := obj.(*corev1.Secret); ok {
			key.Name += "-credentials"
		}
		err := k8sClient.Get(ctx, key, obj)
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s: %v, want none", obj, key, err)
	}
}

// deleteRendered deletes the ConfigMap and the credentials Secret backend
// name of namespace rendered: envtest has no garbage collector.
func deleteRendered(ctx context.Context, namespace, name string) {
	GinkgoHelper()
	Expect(k8sClient.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-backend"}})).To(Succeed())
	Expect(k8sClient.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-backend-credentials"}})).To(Succeed())
}
