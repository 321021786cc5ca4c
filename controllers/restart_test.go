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
})
