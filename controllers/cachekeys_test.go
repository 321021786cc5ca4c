package controllers

import (
	"context"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/render"
	"github.com/infrastate/backend-operator/internal/testenv"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

var _ = Describe("The stores of the cache's informers", func() {
	env := eachSpec()

	// startIndexedCache starts a cache built as the manager's, with its
	// field indexes, watching namespaces (all when nil), until the spec ends.
	startIndexedCache := func(ctx context.Context, namespaces []string) cache.Cache {
		GinkgoHelper()
		opts := CacheOptions(namespaces, labels.Everything())
		opts.Scheme = testenv.Scheme()
		c, err := cache.New(cfg, opts)
		Expect(err).NotTo(HaveOccurred())
		for _, ix := range fieldIndexes() {
			Expect(c.IndexField(ctx, ix.obj, ix.field, ix.extract)).To(Succeed())
		}
		cacheCtx, cancel := context.WithCancel(ctx)
		DeferCleanup(cancel)
		go func() {
			defer GinkgoRecover()
			Expect(c.Start(cacheCtx)).To(Succeed())
		}()
		Expect(c.WaitForCacheSync(ctx)).To(BeTrue())
		return c
	}

	// listed are the keys the cache's List gives for the query.
	listed := func(ctx context.Context, c client.Reader, newList func() client.ObjectList, namespace, field, value string) []types.NamespacedName {
		GinkgoHelper()
		list := newList()
		Expect(c.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{field: value})).To(Succeed())
		var keys []types.NamespacedName
		Expect(related.ForEachObject(list, func(o client.Object) { keys = append(keys, client.ObjectKeyFromObject(o)) })).To(Succeed())
		return sortedNames(keys)
	}

	It("answer the field indexes and the objects held as the cache's List and Get do", func() {
		ctx, ns := env.ctx, env.ns
		other := newNamespace(ctx)
		c := startIndexedCache(ctx, nil)
		reader := newStoreReader(c, c, testenv.Scheme())

		create(ctx, builders.MakeHttpBackend("web", ns, "http://127.0.0.1:1/web").BasicAuth("user", "shared-password", "password").Obj())
		create(ctx, builders.MakeRemoteState("reader", ns, backendsv1alpha1.HttpBackendKind, "web").Obj())
		create(ctx, builders.MakeRemoteState("reader", other, backendsv1alpha1.HttpBackendKind, "web").Obj())
		create(ctx, builders.MakeRemoteState("across", other, backendsv1alpha1.HttpBackendKind, "web").FromNamespace(ns).Obj())
		create(ctx, builders.MakeStateLock("freeze", ns, backendsv1alpha1.HttpBackendKind, "web").Reason("change freeze").Obj())

		queries := []struct {
			newList                 func() client.ObjectList
			namespace, field, value string
			want                    []types.NamespacedName
		}{
			{newRemoteStateList, ns, backendRefIndex, backendRefValue(backendsv1alpha1.HttpBackendKind, "web"), []types.NamespacedName{{Namespace: ns, Name: "reader"}}},
			{newRemoteStateList, other, backendRefIndex, backendRefValue(backendsv1alpha1.HttpBackendKind, "web"), []types.NamespacedName{{Namespace: other, Name: "reader"}}},
			{newRemoteStateList, ns, backendRefIndex, backendRefValue(backendsv1alpha1.HttpBackendKind, "none"), nil},
			{newRemoteStateList, "", producerIndex, producerValue(ns), []types.NamespacedName{{Namespace: other, Name: "across"}}},
			{newRemoteStateList, "", producerIndex, producerBackendValue(ns, backendsv1alpha1.HttpBackendKind, "web"), []types.NamespacedName{{Namespace: other, Name: "across"}}},
			{func() client.ObjectList { return &backendsv1alpha1.StateLockList{} }, ns, backendRefIndex, backendRefValue(backendsv1alpha1.HttpBackendKind, "web"), []types.NamespacedName{{Namespace: ns, Name: "freeze"}}},
			{httpKind{}.newList, ns, related.ReferencesIndex, related.SecretReference("shared-password"), []types.NamespacedName{{Namespace: ns, Name: "web"}}},
			{httpKind{}.newList, other, related.ReferencesIndex, related.SecretReference("shared-password"), nil},
		}
		for _, q := range queries {
			Eventually(func(g Gomega) {
				keys, ok := reader.indexKeys(ctx, q.newList(), q.namespace, q.field, q.value)
				g.Expect(ok).To(BeTrue(), "the store of %T answers", q.newList())
				g.Expect(sortedNames(keys)).To(Equal(q.want), "%s=%s in %q", q.field, q.value, q.namespace)
				g.Expect(listed(ctx, c, q.newList, q.namespace, q.field, q.value)).To(Equal(sortedNames(keys)), "List agrees for %s=%s in %q", q.field, q.value, q.namespace)
			}, timeout).Should(Succeed())
		}

		held, ok := reader.cached(ctx, &backendsv1alpha1.HttpBackend{}, types.NamespacedName{Namespace: ns, Name: "web"})
		Expect(ok).To(BeTrue())
		Expect(held).NotTo(BeNil())
		Expect(held.GetName()).To(Equal("web"))
		missing, ok := reader.cached(ctx, &backendsv1alpha1.HttpBackend{}, types.NamespacedName{Namespace: other, Name: "web"})
		Expect(ok).To(BeTrue())
		Expect(missing).To(BeNil())
		Expect(enqueueWriters(reader, httpKind{}, related.ConfigMapReference)(ctx, builders.MakeConfigMap(render.DefaultConfigMapName("web"), ns).Obj())).
			To(HaveLen(1), "the writer of a default-named ConfigMap is found in the store")
	})

	It("leaves the informers of a list of namespaces to List and Get", func() {
		ctx, ns := env.ctx, env.ns
		other := newNamespace(ctx)
		c := startIndexedCache(ctx, []string{ns, other})
		reader := newStoreReader(c, c, testenv.Scheme())
		create(ctx, builders.MakeRemoteState("reader", ns, backendsv1alpha1.HttpBackendKind, "web").Obj())

		_, ok := reader.indexKeys(ctx, newRemoteStateList(), ns, backendRefIndex, backendRefValue(backendsv1alpha1.HttpBackendKind, "web"))
		Expect(ok).To(BeFalse(), "an informer per namespace has no single store")
		Eventually(func() []reconcile.Request {
			return indexedRequests(ctx, reader, newRemoteStateList, ns, backendRefIndex, backendRefValue(backendsv1alpha1.HttpBackendKind, "web"))
		}, timeout).Should(ConsistOf(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "reader"}}))
	})
})

// sortedNames returns keys sorted, nil when empty.
func sortedNames(keys []types.NamespacedName) []types.NamespacedName {
	if len(keys) == 0 {
		return nil
	}
	return slices.SortedFunc(slices.Values(keys), func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
}
