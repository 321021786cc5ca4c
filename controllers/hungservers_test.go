package controllers

import (
	"context"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// readyWithin bounds how long a backend on a healthy server may take to
// become Ready while other backends' servers hang: seconds, where it took
// minutes when hung probes filled the pool.
const readyWithin = 10 * time.Second

var _ = Describe("Probes of hung servers", func() {
	It("keeps slots for a fifth namespace while four namespaces' servers hung, and pauses a hung server after one attempt", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		DeferCleanup(cancel)
		hungNamespaces := []string{newNamespace(ctx), newNamespace(ctx), newNamespace(ctx), newNamespace(ctx)}
		fifth := newNamespace(ctx)
		startManagerFor(ctx, append(slices.Clone(hungNamespaces), fifth), WithMaxConcurrentReconciles(4))

		By("four namespaces of five backends each on a server that accepts and never answers")
		hung := hungServer(ctx)
		hungBackend := func(ns string, i int) *builders.HttpBackendWrapper {
			return builders.MakeHttpBackend(fmt.Sprintf("hung-%d", i), ns, fmt.Sprintf("%s/state/%s-%d", hung, ns, i))
		}
		for _, ns := range hungNamespaces {
			for i := range 5 {
				create(ctx, hungBackend(ns, i).Obj())
			}
		}
		// Their probes are under way once they are rendered.
		Eventually(func(g Gomega) {
			for _, ns := range hungNamespaces {
				for i := range 5 {
					renderedConfigMap(ctx, g, ns, fmt.Sprintf("hung-%d-backend", i))
				}
			}
		}, timeout, interval).Should(Succeed())

		By("a backend in a fifth namespace is rendered and its state reachable within seconds")
		createPassword(ctx, fifth)
		app := makeStateBackend("app", fifth).Obj()
		start := time.Now()
		create(ctx, app)
		eventuallyWithin(ctx, readyWithin, app, func(g Gomega) {
			expectCondition(g, app.Status.Conditions, "StateReachable", metav1.ConditionTrue, "Reachable")
			expectCondition(g, app.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
		})
		GinkgoWriter.Printf("The fifth namespace's backend was Ready after %s while four namespaces' servers hung\n", time.Since(start))

		By("in a hung namespace, a new backend on a healthy server waits behind the hung probes only until their circuit opens")
		crowded := hungNamespaces[0]
		createPassword(ctx, crowded)
		newcomer := makeStateBackend("newcomer", crowded).Obj()
		create(ctx, newcomer)
		// The first attempt of each hung probe has no answer within the
		// attempt timeout (30s): the circuit opens, the retries and the
		// namespace's next probes of that server fail at once, saying so.
		Eventually(func(g Gomega) {
			for i := range 5 {
				b := hungBackend(crowded, i).Obj()
				getObject(ctx, g, b)
				expectConditionSaying(g, b.Status.Conditions, "StateReachable", metav1.ConditionFalse, "Unreachable",
					"requests to it are paused", "from namespace "+crowded+" are paused since", "had no answer within")
			}
		}, probeAttemptTimeout+timeout, interval).Should(Succeed())
		opened := time.Now()
		eventuallyWithin(ctx, readyWithin, newcomer, func(g Gomega) {
			expectCondition(g, newcomer.Status.Conditions, "StateReachable", metav1.ConditionTrue, "Reachable")
		})
		GinkgoWriter.Printf("The crowded namespace's new backend was Ready %s after its hung probes were paused\n", time.Since(opened))

		By("every hung namespace's backends report the paused server, each namespace its own circuit")
		Eventually(func(g Gomega) {
			for _, ns := range hungNamespaces[1:] {
				for i := range 5 {
					b := hungBackend(ns, i).Obj()
					getObject(ctx, g, b)
					expectConditionSaying(g, b.Status.Conditions, "StateReachable", metav1.ConditionFalse, "Unreachable",
						"from namespace "+ns+" are paused")
				}
			}
		}, probeAttemptTimeout+timeout, interval).Should(Succeed())
	})
})
