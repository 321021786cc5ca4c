package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// backendLabel is the label of every rendered object, naming its backend.
const backendLabel = "backends.infrastate.io/backend"

var _ = Describe("A manager killed in the middle of reconciling", func() {
	It("converges after a restart: every backend Ready with exactly one ConfigMap and one Secret", func(ctx SpecContext) {
		const count = 100
		ns := newNamespace(ctx, "restart")
		createStateServerSecrets(ctx, ns, statePassword)

		By(fmt.Sprintf("applying %d HttpBackends in one multi-document file", count))
		objs := make([]client.Object, 0, count)
		for i := range count {
			objs = append(objs, suiteBackend(fmt.Sprintf("app-%03d", i), fmt.Sprintf("%s-app-%03d", ns, i)).Obj())
		}
		kc.apply(ctx, ns, manifestOf(objs...))

		By("starting the manager and killing it with SIGKILL mid-way")
		mgr := startManager(ns, "--max-concurrent-reconciles=2")
		rendered := 0
		Eventually(func(g Gomega) {
			rendered = countRendered(ctx, g, ns)
			g.Expect(rendered).To(BeNumerically(">=", 10))
		}).WithPolling(10 * time.Millisecond).Should(Succeed())
		mgr.kill()
		rendered = countRendered(ctx, Default, ns)
		GinkgoWriter.Printf("killed the manager with %d of %d ConfigMaps rendered\n", rendered, count)
		Expect(rendered).To(BeNumerically("<", count), "the manager finished before it was killed: nothing was interrupted")

		By("starting it again")
		mgr = startManager(ns)
		DeferCleanup(mgr.stop)
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "httpbackend", "--all", "--timeout=120s")

		backends := &backendsv1alpha1.HttpBackendList{}
		Expect(k8sClient.List(ctx, backends, client.InNamespace(ns))).To(Succeed())
		Expect(backends.Items).To(HaveLen(count))
		uids := map[string]string{}
		for _, b := range backends.Items {
			uids[b.Name] = string(b.UID)
			Expect(b.Status.ObservedGeneration).To(Equal(b.Generation))
		}
		configMaps := &corev1.ConfigMapList{}
		Expect(k8sClient.List(ctx, configMaps, client.InNamespace(ns), client.HasLabels{backendLabel})).To(Succeed())
		secrets := &corev1.SecretList{}
		Expect(k8sClient.List(ctx, secrets, client.InNamespace(ns), client.HasLabels{backendLabel})).To(Succeed())
		Expect(perBackend(configMaps.Items, uids)).To(HaveLen(count))
		Expect(perBackend(secrets.Items, uids)).To(HaveLen(count))
		for name, objects := range perBackend(configMaps.Items, uids) {
			Expect(objects).To(Equal([]string{name + "-backend"}), "ConfigMaps of %s", name)
		}
		for name, objects := range perBackend(secrets.Items, uids) {
			Expect(objects).To(Equal([]string{name + "-backend-credentials"}), "Secrets of %s", name)
		}
	})
})

// countRendered counts the rendered ConfigMaps of namespace.
func countRendered(ctx context.Context, g Gomega, namespace string) int {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	g.Expect(k8sClient.List(ctx, list, client.InNamespace(namespace), client.HasLabels{backendLabel})).To(Succeed())
	return len(list.Items)
}

// perBackend groups objects by the backend label, checking that each is
// controlled by the backend the label names.
func perBackend[T any, P interface {
	*T
	client.Object
}](items []T, uids map[string]string) map[string][]string {
	out := map[string][]string{}
	for i := range items {
		obj := P(&items[i])
		name := obj.GetLabels()[backendLabel]
		owner := metav1.GetControllerOf(obj)
		ExpectWithOffset(1, owner).NotTo(BeNil(), "%s has no controller", obj.GetName())
		ExpectWithOffset(1, string(owner.UID)).To(Equal(uids[name]), "%s is not controlled by HttpBackend %s", obj.GetName(), name)
		out[name] = append(out[name], obj.GetName())
	}
	return out
}
