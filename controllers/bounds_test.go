package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// Specs of what a state or another writer may throw at the operator, and
// what it writes back: values within the API's bounds, stalls instead of
// loops, no fight over an object.
var _ = Describe("Bounds", func() {
	var (
		ctx    context.Context
		ns     string
		writes *writeCounter
	)

	BeforeEach(func() {
		ctx, ns = newSpec()
		writes = startManager(ctx, ns)
		createPassword(ctx, ns)
	})

	It("clips what a state holds to the API's bounds instead of freezing the status", func() {
		lineage, version := strings.Repeat("l", 200), strings.Repeat("9", 100)
		seedState(ctx, stateURL(ns), []byte(fmt.Sprintf(`{"version":4,"terraform_version":%q,"serial":1,"lineage":%q,"outputs":{}}`, version, lineage)))
		backend := makeHttpBackend("app", ns, stateURL(ns)).basicAuth(stateUser, "state-password", "").build()
		Expect(k8sClient.Create(ctx, backend)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			g.Expect(backend.Status.ObservedGeneration).To(Equal(backend.Generation))
			g.Expect(backend.Status.State).NotTo(BeNil())
			g.Expect(backend.Status.State.Lineage).To(Equal(lineage[:128]))
			g.Expect(backend.Status.State.TerraformVersion).To(Equal(version[:64]))
		}, timeout, interval).Should(Succeed())
	})

	It("stops writing a rendered ConfigMap that another writer changed, and renders it again once deleted", func() {
		backend := makeHttpBackend("app", ns, stateURL(ns)).basicAuth(stateUser, "state-password", "").build()
		Expect(k8sClient.Create(ctx, backend)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
		}, timeout, interval).Should(Succeed())

		By("another writer replaces the data, as a CA publisher would")
		cm := renderedConfigMap(ctx, Default, ns, "app-backend")
		rendered := cm.Data
		cm.Data = map[string]string{"ca.crt": "another component's data"}
		Expect(k8sClient.Update(ctx, cm)).To(Succeed())
		before := writes.count()

		By("a spec change makes the operator want to write it again")
		updateSpec(ctx, backend, func() { backend.Spec.UpdateMethod = "PUT" })
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectKstatusInvariants(g, backend)
			c := expectCondition(g, backend.Status.Conditions, "Stalled", metav1.ConditionTrue, "ExternallyModified")
			g.Expect(c.Message).To(ContainSubstring("ConfigMap " + ns + "/app-backend was changed by another writer"))
		}, timeout, interval).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(renderedConfigMap(ctx, g, ns, "app-backend").Data).To(Equal(map[string]string{"ca.crt": "another component's data"}))
		}, 2*time.Second, interval).Should(Succeed())
		for _, w := range writes.since(before) {
			Expect(w).NotTo(ContainSubstring("/configmaps/app-backend"), "the operator wrote the ConfigMap another writer owns")
		}

		By("deleting the ConfigMap lets the operator render it again")
		Expect(k8sClient.Delete(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			data := renderedConfigMap(ctx, g, ns, "app-backend").Data
			g.Expect(data["backend.tf"]).To(ContainSubstring(`update_method = "PUT"`))
			g.Expect(data).NotTo(Equal(rendered))
		}, timeout, interval).Should(Succeed())
	})

	Describe("a RemoteState", func() {
		read := func(name string, mutate func(*backendsv1alpha1.RemoteState)) *backendsv1alpha1.RemoteState {
			Expect(k8sClient.Create(ctx, makeHttpBackend("network", ns, stateURL(ns)).basicAuth(stateUser, "state-password", "").build())).To(Succeed())
			remote := makeRemoteState(name, ns, "HttpBackend", "network")
			if mutate != nil {
				mutate(remote)
			}
			Expect(k8sClient.Create(ctx, remote)).To(Succeed())
			return remote
		}

		It("reports an output whose name no ConfigMap can hold, instead of retrying a refused write", func() {
			seedState(ctx, stateURL(ns), v4State(1, `"ok":{"value":"x","type":"string"},"..":{"value":"y","type":"string"}`))
			remote := read("all", nil)
			Eventually(func(g Gomega) {
				getObject(ctx, g, remote)
				c := expectCondition(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionFalse, "OutputKeyInvalid")
				g.Expect(c.Message).To(ContainSubstring(`".." is not a valid ConfigMap or Secret key`))
			}, timeout, interval).Should(Succeed())

			By("leaving it out publishes the rest")
			updateSpec(ctx, remote, func() { remote.Spec.Outputs = []backendsv1alpha1.OutputSelector{{Name: "ok"}} })
			Eventually(func(g Gomega) {
				getObject(ctx, g, remote)
				expectCondition(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionTrue, "OutputsPublished")
				g.Expect(renderedConfigMap(ctx, g, ns, "all-outputs").Data).To(Equal(map[string]string{"ok": "x"}))
			}, timeout, interval).Should(Succeed())
		})

		It("publishes again within seconds once the cause of a failed publication is gone", func() {
			seedState(ctx, stateURL(ns), v4State(1, `"a":{"value":"x","type":"string"}`))
			remote := read("net", nil)
			Eventually(func(g Gomega) {
				getObject(ctx, g, remote)
				expectCondition(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionTrue, "OutputsPublished")
			}, timeout, interval).Should(Succeed())

			By("another writer changes the published ConfigMap, and a new generation must publish")
			cm := renderedConfigMap(ctx, Default, ns, "net-outputs")
			cm.Data = map[string]string{"someone": "else"}
			Expect(k8sClient.Update(ctx, cm)).To(Succeed())
			updateSpec(ctx, remote, func() { remote.Spec.Outputs = []backendsv1alpha1.OutputSelector{{Name: "a", Key: "A"}} })
			Eventually(func(g Gomega) {
				getObject(ctx, g, remote)
				expectCondition(g, remote.Status.Conditions, "Stalled", metav1.ConditionTrue, "ExternallyModified")
			}, timeout, interval).Should(Succeed())

			By("deleting it publishes the outputs again, without waiting for the next read")
			Expect(k8sClient.Delete(ctx, cm)).To(Succeed())
			Eventually(func(g Gomega) {
				g.Expect(renderedConfigMap(ctx, g, ns, "net-outputs").Data).To(Equal(map[string]string{"A": "x"}))
				getObject(ctx, g, remote)
				expectCondition(g, remote.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			}, 10*time.Second, interval).Should(Succeed())
		})

		It("refuses outputs too many to publish before building them, and publishes a selection", func() {
			var outputs strings.Builder
			for i := range 5000 {
				if i > 0 {
					outputs.WriteByte(',')
				}
				fmt.Fprintf(&outputs, `"o%d":{"value":"v%d","type":"string"}`, i, i)
			}
			seedState(ctx, stateURL(ns), v4State(2, outputs.String()))
			remote := read("many", nil)
			Eventually(func(g Gomega) {
				getObject(ctx, g, remote)
				c := expectCondition(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionFalse, "OutputsTooLarge")
				g.Expect(c.Message).To(ContainSubstring("more than 4096 outputs"))
				g.Expect(c.Message).To(ContainSubstring("spec.outputs"))
			}, timeout, interval).Should(Succeed())
			Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "many-outputs"}, &corev1.ConfigMap{})).NotTo(Succeed())

			updateSpec(ctx, remote, func() { remote.Spec.Outputs = []backendsv1alpha1.OutputSelector{{Name: "o4999", Key: "last"}} })
			Eventually(func(g Gomega) {
				getObject(ctx, g, remote)
				expectCondition(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionTrue, "OutputsPublished")
				g.Expect(remote.Status.State.OutputCount).To(Equal(int32(5000)))
				g.Expect(renderedConfigMap(ctx, g, ns, "many-outputs").Data).To(Equal(map[string]string{"last": "v4999"}))
			}, timeout, interval).Should(Succeed())
		})
	})
})
