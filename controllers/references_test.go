package controllers

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

var _ = Describe("The labeled secret reference policy", func() {
	spec := eachSpecWithManager(WithReferencePolicy(ReferencePolicyLabeled))

	// label adds the allow-reference label to a Secret or ConfigMap.
	label := func(obj interface {
		GetLabels() map[string]string
		SetLabels(map[string]string)
	}) {
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[backendsv1alpha1.AllowReferenceLabel] = "true"
		obj.SetLabels(labels)
	}

	// labelLater labels obj, which was created unlabelled.
	labelLater := func(obj client.Object) {
		GinkgoHelper()
		getObject(spec.ctx, Default, obj)
		label(obj)
		Expect(k8sClient.Update(spec.ctx, obj)).To(Succeed())
	}

	It("never reads an unlabelled Secret, says which label to add, and heals once it is added", func() {
		ctx, ns, requests := spec.ctx, spec.ns, spec.writes
		password := suitePassword(ns)
		// kubectl apply keeps a copy of what it applied in an annotation.
		password.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"` + statePassword + `"}}`}
		backend := makeStateBackend("app", ns).Obj()
		create(ctx, password, backend)

		eventually(ctx, backend, func(g Gomega) {
			expectKstatusInvariants(g, backend)
			expectConditionSaying(g, backend.Status.Conditions, "Stalled", metav1.ConditionTrue, "ReferenceNotAllowed",
				"Secret "+ns+"/state-password referenced by spec.passwordSecretRef is not labelled backends.infrastate.io/allow-reference=true",
				"add the label")
		})

		By("no request read the Secret, not even its metadata, whose annotations hold its data")
		Expect(requests.readsOf("/api/v1/namespaces/" + ns + "/secrets/state-password")).To(BeEmpty())
		for _, r := range requests.readsOf("/api/v1/namespaces/" + ns + "/secrets") {
			Expect(strings.Contains(r.query, "labelSelector=") || strings.Contains(r.accept, "as=PartialObjectMetadata")).To(BeTrue(),
				"a list or watch of Secrets must be filtered by the label or ask for metadata only: %+v", r)
		}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app-backend-credentials"}, &corev1.Secret{})).NotTo(Succeed(),
			"nothing is rendered from a Secret the policy does not allow")

		By("labelling the Secret heals the backend within seconds")
		labelLater(password)
		eventuallyWithin(ctx, 10*time.Second, backend, func(g Gomega) { expectRecovered(ctx, g, backend, statePassword) })
	})

	It("applies to CA ConfigMaps too", func() {
		ctx, ns := spec.ctx, spec.ns
		ca := suiteCAConfigMap(ns)
		cert := suiteClientCert(ns)
		label(cert)
		backend := makeTLSStateBackend("tls", ns).Obj()
		create(ctx, ca, cert, backend)
		eventually(ctx, backend, func(g Gomega) {
			c := expectCondition(g, backend.Status.Conditions, "Stalled", metav1.ConditionTrue, "ReferenceNotAllowed")
			g.Expect(c.Message).To(HavePrefix("ConfigMap " + ns + "/state-ca referenced by spec.tls.caCertificate"))
		})

		labelLater(ca)
		eventuallyWithin(ctx, 10*time.Second, backend, func(g Gomega) {
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
		})
	})

	It("refuses a RemoteState target that is someone else's Secret without reading it", func() {
		ctx, ns, requests := spec.ctx, spec.ns, spec.writes
		create(ctx, builders.MakeSecret("team-secret", ns).Data(map[string]string{"token": "t0p-secret-value"}).Obj())
		Eventually(func(g Gomega) { // the manager's cache sees it
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "team-secret"}, &corev1.Secret{})).To(Succeed())
		}, timeout, interval).Should(Succeed())
		time.Sleep(time.Second)
		password := suitePassword(ns)
		label(password)
		create(ctx, password, makeStateBackend("network", ns).Obj())
		seedState(ctx, stateURL(ns), v4State(1, `"a":{"value":"x","type":"string"}`))
		remote := builders.MakeRemoteState("net", ns, "HttpBackend", "network").Target("", "team-secret").Obj()
		create(ctx, remote)
		eventuallyCondition(ctx, remote, "Stalled", metav1.ConditionTrue, "NameConflict")
		Expect(requests.readsOf("/api/v1/namespaces/"+ns+"/secrets/team-secret")).To(BeEmpty(), "the foreign Secret was read")
	})

	It("tells a missing Secret from an unlabelled one", func() {
		ctx, ns := spec.ctx, spec.ns
		backend := builders.MakeHttpBackend("app", ns, stateURL(ns)).BasicAuth(stateUser, "missing", "").Obj()
		create(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			expectConditionSaying(g, backend.Status.Conditions, "Stalled", metav1.ConditionTrue, "SecretNotFound", "does not exist")
		})
	})
})
