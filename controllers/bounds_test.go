package controllers

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// Specs of what a state or another writer may throw at the operator, and
// what it writes back: values within the API's bounds, stalls instead of
// loops, no fight over an object.
var _ = Describe("Bounds", func() {
	spec := eachSpecWithManager()
	BeforeEach(func() { createPassword(spec.ctx, spec.ns) })

	It("clips what a state holds to the API's bounds instead of freezing the status", func() {
		ctx, ns := spec.ctx, spec.ns
		lineage, version := strings.Repeat("l", 200), strings.Repeat("9", 100)
		seedState(ctx, stateURL(ns), []byte(fmt.Sprintf(`{"version":4,"terraform_version":%q,"serial":1,"lineage":%q,"outputs":{}}`, version, lineage)))
		backend := makeStateBackend("app", ns).Obj()
		create(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			g.Expect(backend.Status.ObservedGeneration).To(Equal(backend.Generation))
			g.Expect(backend.Status.State).NotTo(BeNil())
			g.Expect(backend.Status.State.Lineage).To(Equal(lineage[:128]))
			g.Expect(backend.Status.State.TerraformVersion).To(Equal(version[:64]))
		})
	})

	It("stops writing a rendered ConfigMap that another writer changed, and renders it again once deleted", func() {
		ctx, ns, writes := spec.ctx, spec.ns, spec.writes
		backend := makeStateBackend("app", ns).Obj()
		create(ctx, backend)
		eventuallyReady(ctx, backend)

		By("another writer replaces the data, as a CA publisher would")
		cm := renderedConfigMap(ctx, Default, ns, "app-backend")
		rendered := cm.Data
		cm.Data = map[string]string{"ca.crt": "another component's data"}
		Expect(k8sClient.Update(ctx, cm)).To(Succeed())
		before := writes.count()

		By("a spec change makes the operator want to write it again")
		updateSpec(ctx, backend, func() { backend.Spec.UpdateMethod = "PUT" })
		eventually(ctx, backend, func(g Gomega) {
			expectKstatusInvariants(g, backend)
			expectConditionSaying(g, backend.Status.Conditions, "Stalled", metav1.ConditionTrue, "ExternallyModified",
				"ConfigMap "+ns+"/app-backend was changed by another writer")
		})
		Consistently(func(g Gomega) {
			g.Expect(renderedConfigMap(ctx, g, ns, "app-backend").Data).To(Equal(map[string]string{"ca.crt": "another component's data"}))
		}, 2*time.Second, interval).Should(Succeed())
		for _, w := range writes.since(before) {
			Expect(w).NotTo(ContainSubstring("/configmaps/app-backend"), "the operator wrote the ConfigMap another writer owns")
		}

		By("deleting the ConfigMap lets the operator render it again")
		Expect(k8sClient.Delete(ctx, cm)).To(Succeed())
		eventually(ctx, backend, func(g Gomega) {
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			data := renderedConfigMap(ctx, g, ns, "app-backend").Data
			g.Expect(data["backend.tf"]).To(ContainSubstring(`update_method = "PUT"`))
			g.Expect(data).NotTo(Equal(rendered))
		})
	})

	Describe("a RemoteState", func() {
		// read creates the HttpBackend "network" of the spec's state and a
		// RemoteState of it.
		read := func(name string) *backendsv1alpha1.RemoteState {
			remote := builders.MakeRemoteState(name, spec.ns, "HttpBackend", "network").Obj()
			create(spec.ctx, makeStateBackend("network", spec.ns).Obj(), remote)
			return remote
		}

		It("reports an output whose name no ConfigMap can hold, instead of retrying a refused write", func() {
			ctx, ns := spec.ctx, spec.ns
			seedState(ctx, stateURL(ns), v4State(1, `"ok":{"value":"x","type":"string"},"..":{"value":"y","type":"string"}`))
			remote := read("all")
			eventually(ctx, remote, func(g Gomega) {
				expectConditionSaying(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionFalse, "OutputKeyInvalid",
					`".." is not a valid ConfigMap or Secret key`)
			})

			By("leaving it out publishes the rest")
			updateSpec(ctx, remote, func() { remote.Spec.Outputs = []backendsv1alpha1.OutputSelector{{Name: "ok"}} })
			eventually(ctx, remote, func(g Gomega) {
				expectCondition(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionTrue, "OutputsPublished")
				g.Expect(renderedConfigMap(ctx, g, ns, "all-outputs").Data).To(Equal(map[string]string{"ok": "x"}))
			})
		})

		It("publishes again within seconds once the cause of a failed publication is gone", func() {
			ctx, ns := spec.ctx, spec.ns
			seedState(ctx, stateURL(ns), v4State(1, `"a":{"value":"x","type":"string"}`))
			remote := read("net")
			eventuallyCondition(ctx, remote, "OutputsReady", metav1.ConditionTrue, "OutputsPublished")

			By("another writer changes the published ConfigMap, and a new generation must publish")
			cm := renderedConfigMap(ctx, Default, ns, "net-outputs")
			cm.Data = map[string]string{"someone": "else"}
			Expect(k8sClient.Update(ctx, cm)).To(Succeed())
			updateSpec(ctx, remote, func() { remote.Spec.Outputs = []backendsv1alpha1.OutputSelector{{Name: "a", Key: "A"}} })
			eventuallyCondition(ctx, remote, "Stalled", metav1.ConditionTrue, "ExternallyModified")

			By("deleting it publishes the outputs again, without waiting for the next read")
			Expect(k8sClient.Delete(ctx, cm)).To(Succeed())
			Eventually(func(g Gomega) {
				g.Expect(renderedConfigMap(ctx, g, ns, "net-outputs").Data).To(Equal(map[string]string{"A": "x"}))
				getObject(ctx, g, remote)
				expectCondition(g, remote.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			}, 10*time.Second, interval).Should(Succeed())
		})

		It("refuses outputs too many to publish before building them, and publishes a selection", func() {
			ctx, ns := spec.ctx, spec.ns
			var outputs strings.Builder
			for i := range 5000 {
				if i > 0 {
					outputs.WriteByte(',')
				}
				fmt.Fprintf(&outputs, `"o%d":{"value":"v%d","type":"string"}`, i, i)
			}
			seedState(ctx, stateURL(ns), v4State(2, outputs.String()))
			remote := read("many")
			eventually(ctx, remote, func(g Gomega) {
				expectConditionSaying(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionFalse, "OutputsTooLarge",
					"more than 4096 outputs", "spec.outputs")
			})
			Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "many-outputs"}, &corev1.ConfigMap{})).NotTo(Succeed())

			updateSpec(ctx, remote, func() { remote.Spec.Outputs = []backendsv1alpha1.OutputSelector{{Name: "o4999", Key: "last"}} })
			eventually(ctx, remote, func(g Gomega) {
				expectCondition(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionTrue, "OutputsPublished")
				g.Expect(remote.Status.State.OutputCount).To(Equal(int32(5000)))
				g.Expect(renderedConfigMap(ctx, g, ns, "many-outputs").Data).To(Equal(map[string]string{"last": "v4999"}))
			})
		})
	})
})
