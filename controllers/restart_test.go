package controllers

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/render"
	"github.com/infrastate/backend-operator/internal/stateserver"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

var _ = Describe("A manager restart", func() {
	It("spreads the probes of backends it already probed over their interval instead of firing them all at once", func() {
		ctx, ns := newSpec()
		counting := stateserver.New(stateserver.NewMemoryStore(), stateserver.WithRequestCounting())
		srv := httptest.NewServer(counting)
		DeferCleanup(srv.Close)

		const backends = 20
		first := startManager(ctx, ns)
		var objs []*backendsv1alpha1.HttpBackend
		for i := range backends {
			b := builders.MakeHttpBackend(fmt.Sprintf("b%02d", i), ns, fmt.Sprintf("%s/state/b%02d", srv.URL, i)).ProbeInterval(10 * time.Minute).Obj()
			create(ctx, b)
			objs = append(objs, b)
		}
		Eventually(func(g Gomega) {
			for _, b := range objs {
				getObject(ctx, g, b)
				expectCondition(g, b.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			}
		}, timeout, interval).Should(Succeed())
		Expect(counting.Requests(http.MethodGet, "")).To(Equal(backends), "one probe per backend")

		By("restarting the manager")
		first.stop()
		counting.ResetRequests()
		startManager(ctx, ns)
		// With the probes spread uniformly over 10 minutes, 20 backends
		// expect 0.2 probes in these 6 seconds; fired at once, they were 20.
		time.Sleep(6 * time.Second)
		probes := counting.Requests(http.MethodGet, "")
		GinkgoWriter.Printf("probes in the first 6 s after the restart: %d of %d backends\n", probes, backends)
		Expect(probes).To(BeNumerically("<=", 3))
		for _, b := range objs {
			getObject(ctx, Default, b)
			expectCondition(Default, b.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
		}
	})

	It("brings a backend created while it was away to Ready, and resyncs the Ready ones, writing only for what changed", func() {
		ctx, ns := newSpec()
		srv := httptest.NewServer(stateserver.New(stateserver.NewMemoryStore()))
		DeferCleanup(srv.Close)

		const settled = 5
		first := startManager(ctx, ns)
		var objs []*backendsv1alpha1.HttpBackend
		for i := range settled {
			b := builders.MakeHttpBackend(fmt.Sprintf("b%02d", i), ns, fmt.Sprintf("%s/state/b%02d", srv.URL, i)).ProbeInterval(10 * time.Minute).Obj()
			create(ctx, b)
			objs = append(objs, b)
		}
		for _, b := range objs {
			eventuallyReady(ctx, b)
		}
		first.stop()

		By("changing a rendered ConfigMap and creating a backend while the manager is away")
		changed := renderedConfigMap(ctx, Default, ns, render.DefaultConfigMapName(objs[0].Name))
		changed.Data = map[string]string{"backend.tf": "# changed by hand"}
		Expect(k8sClient.Update(ctx, changed)).To(Succeed())
		fresh := builders.MakeHttpBackend("fresh", ns, srv.URL+"/state/fresh").ProbeInterval(10 * time.Minute).Obj()
		create(ctx, fresh)

		second := startManager(ctx, ns)
		eventuallyReady(ctx, fresh)
		// The Ready backends are reconciled after the new one, but they
		// are: the one whose ConfigMap changed says so, and every one
		// read its ConfigMap to check it.
		eventuallyCondition(ctx, objs[0], "Stalled", metav1.ConditionTrue, "ExternallyModified")
		Eventually(func(g Gomega) {
			for _, b := range objs {
				path := "/api/v1/namespaces/" + ns + "/configmaps/" + render.DefaultConfigMapName(b.Name)
				g.Expect(second.readsOf(path)).NotTo(BeEmpty(), "%s was not resynced", b.Name)
			}
		}, timeout, interval).Should(Succeed())
		for _, b := range objs[1:] {
			for _, w := range second.since(0) {
				Expect(w).NotTo(ContainSubstring("/"+b.Name), "the unchanged %s was written", b.Name)
			}
			getObject(ctx, Default, b)
			expectCondition(Default, b.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
		}
	})
})
