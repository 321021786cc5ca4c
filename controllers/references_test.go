package controllers

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

var _ = Describe("The labeled secret reference policy", func() {
	var (
		ctx      context.Context
		ns       string
		requests *writeCounter
	)

	BeforeEach(func() {
		ctx, ns = newSpec()
		requests = startManager(ctx, ns, WithReferencePolicy(ReferencePolicyLabeled))
	})

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

	It("never reads an unlabelled Secret, says which label to add, and heals once it is added", func() {
		password := makeSecret("state-password", ns, map[string]string{"password": statePassword})
		// kubectl apply keeps a copy of what it applied in an annotation.
		password.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"` + statePassword + `"}}`}
		Expect(k8sClient.Create(ctx, password)).To(Succeed())
		backend := makeHttpBackend("app", ns, stateURL(ns)).basicAuth(stateUser, "state-password", "").build()
		Expect(k8sClient.Create(ctx, backend)).To(Succeed())

		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectKstatusInvariants(g, backend)
			c := expectCondition(g, backend.Status.Conditions, "Stalled", metav1.ConditionTrue, "ReferenceNotAllowed")
			g.Expect(c.Message).To(ContainSubstring("Secret " + ns + "/state-password referenced by spec.passwordSecretRef is not labelled backends.infrastate.io/allow-reference=true"))
			g.Expect(c.Message).To(ContainSubstring("add the label"))
		}, timeout, interval).Should(Succeed())

		By("no request read the Secret, not even its metadata, whose annotations hold its data")
		Expect(requests.readsOf("/api/v1/namespaces/" + ns + "/secrets/state-password")).To(BeEmpty())
		for _, r := range requests.readsOf("/api/v1/namespaces/" + ns + "/secrets") {
			Expect(strings.Contains(r.query, "labelSelector=") || strings.Contains(r.accept, "as=PartialObjectMetadata")).To(BeTrue(),
				"a list or watch of Secrets must be filtered by the label or ask for metadata only: %+v", r)
		}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app-backend-credentials"}, &corev1.Secret{})).NotTo(Succeed(),
			"nothing is rendered from a Secret the policy does not allow")

		By("labelling the Secret heals the backend within seconds")
		getObject(ctx, Default, password)
		label(password)
		Expect(k8sClient.Update(ctx, password)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			g.Expect(backend.Status.Conditions).NotTo(ContainElement(HaveField("Type", "Stalled")))
			g.Expect(renderedSecret(ctx, g, ns, "app-backend-credentials").Data).To(HaveKeyWithValue("TF_HTTP_PASSWORD", []byte(statePassword)))
		}, 10*time.Second, interval).Should(Succeed())
	})

	It("applies to CA ConfigMaps too", func() {
		ca := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "state-ca", Namespace: ns}, Data: map[string]string{"ca.crt": string(suiteCerts.caPEM)}}
		Expect(k8sClient.Create(ctx, ca)).To(Succeed())
		cert := makeTLSSecret("client-cert", ns, suiteCerts.clientCertPEM, suiteCerts.clientKeyPEM)
		label(cert)
		Expect(k8sClient.Create(ctx, cert)).To(Succeed())
		backend := makeHttpBackend("tls", ns, tlsStateURL(ns)).clientCertificate("client-cert").caFromConfigMap("state-ca").build()
		Expect(k8sClient.Create(ctx, backend)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			c := expectCondition(g, backend.Status.Conditions, "Stalled", metav1.ConditionTrue, "ReferenceNotAllowed")
			g.Expect(c.Message).To(HavePrefix("ConfigMap " + ns + "/state-ca referenced by spec.tls.caCertificate"))
		}, timeout, interval).Should(Succeed())

		getObject(ctx, Default, ca)
		label(ca)
		Expect(k8sClient.Update(ctx, ca)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
		}, 10*time.Second, interval).Should(Succeed())
	})

	It("refuses a RemoteState target that is someone else's Secret without reading it", func() {
		Expect(k8sClient.Create(ctx, makeSecret("team-secret", ns, map[string]string{"token": "t0p-secret-value"}))).To(Succeed())
		Eventually(func(g Gomega) { // the manager's cache sees it
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "team-secret"}, &corev1.Secret{})).To(Succeed())
		}, timeout, interval).Should(Succeed())
		time.Sleep(time.Second)
		password := makeSecret("state-password", ns, map[string]string{"password": statePassword})
		label(password)
		Expect(k8sClient.Create(ctx, password)).To(Succeed())
		Expect(k8sClient.Create(ctx, makeHttpBackend("network", ns, stateURL(ns)).basicAuth(stateUser, "state-password", "").build())).To(Succeed())
		seedState(ctx, stateURL(ns), v4State(1, `"a":{"value":"x","type":"string"}`))
		remote := makeRemoteState("net", ns, "HttpBackend", "network")
		remote.Spec.Target.SecretName = "team-secret"
		Expect(k8sClient.Create(ctx, remote)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, remote)
			expectCondition(g, remote.Status.Conditions, "Stalled", metav1.ConditionTrue, "NameConflict")
		}, timeout, interval).Should(Succeed())
		Expect(requests.readsOf("/api/v1/namespaces/"+ns+"/secrets/team-secret")).To(BeEmpty(), "the foreign Secret was read")
	})

	It("tells a missing Secret from an unlabelled one", func() {
		backend := makeHttpBackend("app", ns, stateURL(ns)).basicAuth(stateUser, "missing", "").build()
		Expect(k8sClient.Create(ctx, backend)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			c := expectCondition(g, backend.Status.Conditions, "Stalled", metav1.ConditionTrue, "SecretNotFound")
			g.Expect(strings.Contains(c.Message, "does not exist")).To(BeTrue(), c.Message)
		}, timeout, interval).Should(Succeed())
	})
})
