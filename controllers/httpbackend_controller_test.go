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

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// stateURL is the address of a state on the plain state server; each spec
// uses its namespace as the state's name, so specs never share a state.
func stateURL(namespace string) string { return stateHTTPServer.URL + "/state/" + namespace }

// tlsStateURL is the same on the mutual TLS state server.
func tlsStateURL(namespace string) string { return stateTLSServer.URL + "/state/" + namespace }

// v4State is a minimal state document with the given serial.
func v4State(serial int, outputs string) []byte {
	return []byte(fmt.Sprintf(`{"version":4,"terraform_version":"1.5.7","serial":%d,"lineage":"lineage-1","outputs":{%s},"resources":[],"check_results":null}`, serial, outputs))
}

// seedState writes a state through the real protocol client.
func seedState(ctx context.Context, address string, data []byte) {
	cfg := stateclient.DefaultConfig(address)
	cfg.Username, cfg.Password = stateUser, statePassword
	sc, err := stateclient.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	Expect(sc.Update(ctx, data)).To(Succeed())
}

// holdLock takes the state's lock as another client would and returns its ID.
func holdLock(ctx context.Context, address string) string {
	return holdLockAs(ctx, address, true)
}

// holdLockAs is holdLock, with the suite's basic auth or without.
func holdLockAs(ctx context.Context, address string, basicAuth bool) string {
	sc := lockingClient(address, basicAuth)
	info := stateclient.NewLockInfo("OperationTypeApply", "alice@laptop")
	id, err := sc.Lock(ctx, info)
	Expect(err).NotTo(HaveOccurred())
	return id
}

// lockingClient is a state client of address that locks there too, with
// the suite's basic auth or without.
func lockingClient(address string, basicAuth bool) *stateclient.Client {
	cfg := stateclient.DefaultConfig(address)
	if basicAuth {
		cfg.Username, cfg.Password = stateUser, statePassword
	}
	cfg.LockAddress, cfg.UnlockAddress = address, address
	sc, err := stateclient.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	return sc
}

var _ = Describe("HttpBackend controller", func() {
	var (
		ctx    context.Context
		ns     string
		writes *writeCounter
	)

	BeforeEach(func() {
		ctx, ns = newSpec()
		writes = startManager(ctx, ns)
	})

	It("renders the backend, probes the state and reports it Ready", func() {
		createPassword(ctx, ns)
		seedState(ctx, stateURL(ns), v4State(7, `"a":{"value":"x","type":"string"},"b":{"value":1,"type":"number","sensitive":true}`))
		backend := makeHttpBackend("app", ns, stateURL(ns)).locks().basicAuth(stateUser, "state-password", "").build()
		start := time.Now()
		Expect(k8sClient.Create(ctx, backend)).To(Succeed())

		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectKstatusInvariants(g, backend)
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			expectCondition(g, backend.Status.Conditions, "StateReachable", metav1.ConditionTrue, "Reachable")
			g.Expect(backend.Status.ObservedGeneration).To(Equal(backend.Generation))
		}, timeout, interval).Should(Succeed())
		GinkgoWriter.Printf("apply to Ready: %s\n", time.Since(start))

		Expect(backend.Status.State).To(Equal(&backendsv1alpha1.StateSummary{
			Present: true, Serial: 7, Lineage: "lineage-1", TerraformVersion: "1.5.7",
			SizeBytes: int64(len(v4State(7, `"a":{"value":"x","type":"string"},"b":{"value":1,"type":"number","sensitive":true}`))), OutputCount: 2,
		}))
		Expect(backend.Status.Rendered).To(Equal(&backendsv1alpha1.RenderedObjects{ConfigMapName: "app-backend", SecretName: "app-backend-credentials"}))
		Expect(backend.Status.Conditions).NotTo(ContainElement(HaveField("Type", "Locked")), "no lock check was asked for")

		cm := renderedConfigMap(ctx, Default, ns, "app-backend")
		expectControlledBy(Default, cm, backend, "HttpBackend")
		Expect(cm.Data).To(HaveKey("backend.tf"))
		Expect(cm.Data).To(HaveKey("backend.tf.json"))
		Expect(cm.Data).To(HaveKey("backend.tfbackend"))
		Expect(cm.Data["backend.tf"]).To(ContainSubstring(`backend "http"`))
		Expect(cm.Data["backend.tf"]).To(ContainSubstring(stateURL(ns)))
		Expect(cm.Data["backend.tf"]).To(ContainSubstring(`username`))
		for _, content := range cm.Data {
			Expect(content).NotTo(ContainSubstring(statePassword))
		}

		secret := renderedSecret(ctx, Default, ns, "app-backend-credentials")
		expectControlledBy(Default, secret, backend, "HttpBackend")
		Expect(secret.Data).To(Equal(map[string][]byte{"TF_HTTP_PASSWORD": []byte(statePassword)}))
	})

	It("renders mutual TLS material and reaches a TLS state server", func() {
		Expect(k8sClient.Create(ctx, makeTLSSecret("client-cert", ns, suiteCerts.clientCertPEM, suiteCerts.clientKeyPEM))).To(Succeed())
		Expect(k8sClient.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "state-ca", Namespace: ns},
			Data:       map[string]string{"ca.crt": string(suiteCerts.caPEM)},
		})).To(Succeed())
		backend := makeHttpBackend("tls", ns, tlsStateURL(ns)).clientCertificate("client-cert").caFromConfigMap("state-ca").build()
		Expect(k8sClient.Create(ctx, backend)).To(Succeed())

		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			expectCondition(g, backend.Status.Conditions, "StateReachable", metav1.ConditionTrue, "Reachable")
		}, timeout, interval).Should(Succeed())
		Expect(backend.Status.State).To(Equal(&backendsv1alpha1.StateSummary{Present: false}))

		secret := renderedSecret(ctx, Default, ns, "tls-backend-credentials")
		Expect(secret.Data).To(Equal(map[string][]byte{
			"TF_HTTP_CLIENT_CERTIFICATE_PEM":    suiteCerts.clientCertPEM,
			"TF_HTTP_CLIENT_PRIVATE_KEY_PEM":    suiteCerts.clientKeyPEM,
			"TF_HTTP_CLIENT_CA_CERTIFICATE_PEM": suiteCerts.caPEM,
		}))
		cm := renderedConfigMap(ctx, Default, ns, "tls-backend")
		for _, content := range cm.Data {
			Expect(content).NotTo(ContainSubstring("PRIVATE KEY"))
			Expect(content).NotTo(ContainSubstring("CERTIFICATE"))
		}
	})

	DescribeTable("reports why the backend cannot be used",
		func(setup func(ns string) *backendsv1alpha1.HttpBackend, condType string, status metav1.ConditionStatus, reason, message string) {
			backend := setup(ns)
			Expect(k8sClient.Create(ctx, backend)).To(Succeed())
			Eventually(func(g Gomega) {
				getObject(ctx, g, backend)
				expectKstatusInvariants(g, backend)
				c := expectCondition(g, backend.Status.Conditions, condType, status, reason)
				g.Expect(c.Message).To(ContainSubstring(message))
				ready := expectCondition(g, backend.Status.Conditions, "Ready", readyStatus(status), reason)
				g.Expect(ready.Message).To(ContainSubstring(message))
			}, timeout, interval).Should(Succeed())
		},
		Entry("a missing password Secret", func(ns string) *backendsv1alpha1.HttpBackend {
			return makeHttpBackend("b", ns, stateURL(ns)).basicAuth(stateUser, "missing", "").build()
		}, "Stalled", metav1.ConditionTrue, "SecretNotFound", "Secret "),
		Entry("a missing password key", func(ns string) *backendsv1alpha1.HttpBackend {
			Expect(k8sClient.Create(ctx, makeSecret("pw", ns, map[string]string{"other": "x"}))).To(Succeed())
			return makeHttpBackend("b", ns, stateURL(ns)).basicAuth(stateUser, "pw", "token").build()
		}, "Stalled", metav1.ConditionTrue, "SecretKeyMissing", `has no key "token"`),
		Entry("a CA bundle without a certificate", func(ns string) *backendsv1alpha1.HttpBackend {
			Expect(k8sClient.Create(ctx, makeSecret("ca", ns, map[string]string{"ca.crt": "not a pem"}))).To(Succeed())
			return makeHttpBackend("b", ns, tlsStateURL(ns)).caFromSecret("ca", "ca.crt").build()
		}, "Stalled", metav1.ConditionTrue, "InvalidCertificate", "holds no PEM certificate"),
		Entry("a client key that does not match the certificate", func(ns string) *backendsv1alpha1.HttpBackend {
			Expect(k8sClient.Create(ctx, makeTLSSecret("cert", ns, suiteCerts.clientCertPEM, suiteCerts.otherKeyPEM))).To(Succeed())
			return makeHttpBackend("b", ns, tlsStateURL(ns)).clientCertificate("cert").build()
		}, "Stalled", metav1.ConditionTrue, "InvalidCertificate", "do not match"),
		Entry("a missing CA ConfigMap", func(ns string) *backendsv1alpha1.HttpBackend {
			return makeHttpBackend("b", ns, tlsStateURL(ns)).caFromConfigMap("nope").build()
		}, "Stalled", metav1.ConditionTrue, "ConfigMapNotFound", "ConfigMap "),
		Entry("a wrong password", func(ns string) *backendsv1alpha1.HttpBackend {
			Expect(k8sClient.Create(ctx, makeSecret("pw", ns, map[string]string{"password": "wrong"}))).To(Succeed())
			return makeHttpBackend("b", ns, stateURL(ns)).basicAuth(stateUser, "pw", "").build()
		}, "StateReachable", metav1.ConditionFalse, "Forbidden", "invalid auth"),
		Entry("no credentials", func(ns string) *backendsv1alpha1.HttpBackend {
			return makeHttpBackend("b", ns, stateURL(ns)).build()
		}, "StateReachable", metav1.ConditionFalse, "Unauthorized", "requires auth"),
		Entry("a server that refuses the request", func(ns string) *backendsv1alpha1.HttpBackend {
			stateServer.InjectFault(stateserverFault("/state/"+ns, 403))
			return makeHttpBackend("b", ns, stateURL(ns)).build()
		}, "StateReachable", metav1.ConditionFalse, "Forbidden", "invalid auth"),
		Entry("an untrusted server certificate", func(ns string) *backendsv1alpha1.HttpBackend {
			Expect(k8sClient.Create(ctx, makeSecret("ca", ns, map[string]string{"ca.crt": string(suiteCerts.otherCAPEM)}))).To(Succeed())
			return makeHttpBackend("b", ns, tlsStateURL(ns)).caFromSecret("ca", "ca.crt").retries(0, 0, 0).build()
		}, "StateReachable", metav1.ConditionFalse, "TLSError", "certificate"),
		Entry("an address nobody listens on", func(ns string) *backendsv1alpha1.HttpBackend {
			return makeHttpBackend("b", ns, "http://127.0.0.1:1/state/"+ns).retries(0, 0, 0).build()
		}, "StateReachable", metav1.ConditionFalse, "Unreachable", "127.0.0.1:1"),
		Entry("a server error", func(ns string) *backendsv1alpha1.HttpBackend {
			stateServer.InjectFault(stateserverFault("/state/"+ns, 500))
			return makeHttpBackend("b", ns, stateURL(ns)).retries(0, 0, 0).build()
		}, "StateReachable", metav1.ConditionFalse, "ServerError", "500"),
	)

	It("keeps the last good render when a Secret breaks, and follows its rotation", func() {
		createPassword(ctx, ns)
		backend := makeHttpBackend("app", ns, stateURL(ns)).basicAuth(stateUser, "state-password", "password").build()
		Expect(k8sClient.Create(ctx, backend)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
		}, timeout, interval).Should(Succeed())
		goodConfigMap := renderedConfigMap(ctx, Default, ns, "app-backend")

		By("rotating the password")
		rotated := "rotated-" + statePassword
		password := &corev1.Secret{}
		getObject(ctx, Default, withKey(password, ns, "state-password"))
		password.Data["password"] = []byte(rotated)
		Expect(k8sClient.Update(ctx, password)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(renderedSecret(ctx, g, ns, "app-backend-credentials").Data).To(HaveKeyWithValue("TF_HTTP_PASSWORD", []byte(rotated)))
		}, timeout, interval).Should(Succeed())

		By("deleting the password Secret")
		Expect(k8sClient.Delete(ctx, password)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectKstatusInvariants(g, backend)
			expectCondition(g, backend.Status.Conditions, "Stalled", metav1.ConditionTrue, "SecretNotFound")
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionFalse, "SecretNotFound")
		}, timeout, interval).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(renderedSecret(ctx, g, ns, "app-backend-credentials").Data).To(HaveKeyWithValue("TF_HTTP_PASSWORD", []byte(rotated)))
			g.Expect(renderedConfigMap(ctx, g, ns, "app-backend").Data).To(Equal(goodConfigMap.Data))
		}, 2*time.Second, interval).Should(Succeed())

		By("creating it again")
		createPassword(ctx, ns)
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			g.Expect(backend.Status.Conditions).NotTo(ContainElement(HaveField("Type", "Stalled")))
			g.Expect(renderedSecret(ctx, g, ns, "app-backend-credentials").Data).To(HaveKeyWithValue("TF_HTTP_PASSWORD", []byte(statePassword)))
		}, timeout, interval).Should(Succeed())
	})

	It("shows the lock holder and releases it only for the ID forceUnlock names", func() {
		createPassword(ctx, ns)
		holder := holdLock(ctx, stateURL(ns))
		backend := makeHttpBackend("app", ns, stateURL(ns)).locks().basicAuth(stateUser, "state-password", "").lockCheck().build()
		Expect(k8sClient.Create(ctx, backend)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "LockHeld")
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			g.Expect(backend.Status.Lock).NotTo(BeNil())
			g.Expect(backend.Status.Lock.ID).To(Equal(holder))
			g.Expect(backend.Status.Lock.Who).To(Equal("alice@laptop"))
			g.Expect(backend.Status.Lock.Operation).To(Equal("OperationTypeApply"))
		}, timeout, interval).Should(Succeed())

		By("naming another ID")
		updateSpec(ctx, backend, func() { backend.Spec.ForceUnlock = &backendsv1alpha1.ForceUnlockSpec{LockID: "not-the-holder"} })
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			g.Expect(backend.Status.ObservedGeneration).To(Equal(backend.Generation))
			c := expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "ForceUnlockSkipped")
			g.Expect(c.Message).To(ContainSubstring("does not match the holder " + holder))
		}, timeout, interval).Should(Succeed())

		By("naming the holder")
		updateSpec(ctx, backend, func() { backend.Spec.ForceUnlock.LockID = holder })
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectForceUnlocked(g, backend.Status.Conditions, backend.Status.Lock, backend.Status.LastForceUnlock, holder)
		}, timeout, interval).Should(Succeed())
		Eventually(func(g Gomega) []string { return eventReasons(ctx, g, ns) }, timeout, interval).Should(ContainElement("ForceUnlocked"))

		By("locking again: the lock is free, a stale forceUnlock does nothing")
		next := holdLock(ctx, stateURL(ns))
		Expect(next).NotTo(Equal(holder))
	})

	It("writes nothing on a resync that finds nothing new", func() {
		createPassword(ctx, ns)
		backend := makeHttpBackend("app", ns, stateURL(ns)).locks().basicAuth(stateUser, "state-password", "").lockCheck().build()
		Expect(k8sClient.Create(ctx, backend)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionFalse, "NotLocked")
		}, timeout, interval).Should(Succeed())
		// Let the reconciles triggered by the manager's own writes settle.
		time.Sleep(time.Second)
		before := writes.count()

		By("touching the referenced Secret, which triggers a reconcile")
		password := &corev1.Secret{}
		getObject(ctx, Default, withKey(password, ns, "state-password"))
		password.Labels = map[string]string{"touched": "yes"}
		Expect(k8sClient.Update(ctx, password)).To(Succeed())
		By("touching the rendered ConfigMap's unrelated annotation")
		cm := renderedConfigMap(ctx, Default, ns, "app-backend")
		cm.Annotations = map[string]string{"example.com/note": "hello"}
		Expect(k8sClient.Update(ctx, cm)).To(Succeed())

		Consistently(func() []string { return writes.since(before) }, 3*time.Second, interval).Should(BeEmpty())
		GinkgoWriter.Printf("writes of a no-op resync: %d\n", len(writes.since(before)))
	})

	It("leaves a foreign ConfigMap alone", func() {
		Expect(k8sClient.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: ns},
			Data:       map[string]string{"mine": "yes"},
		})).To(Succeed())
		backend := makeHttpBackend("app", ns, stateURL(ns)).configMapName("taken").build()
		Expect(k8sClient.Create(ctx, backend)).To(Succeed())
		Eventually(func(g Gomega) {
			getObject(ctx, g, backend)
			expectCondition(g, backend.Status.Conditions, "Stalled", metav1.ConditionTrue, "NameConflict")
		}, timeout, interval).Should(Succeed())
		Expect(renderedConfigMap(ctx, Default, ns, "taken").Data).To(Equal(map[string]string{"mine": "yes"}))
	})

	It("never puts secret material in a ConfigMap, event, condition or status", func() {
		createPassword(ctx, ns)
		Expect(k8sClient.Create(ctx, makeTLSSecret("client-cert", ns, suiteCerts.clientCertPEM, suiteCerts.clientKeyPEM))).To(Succeed())
		ok := makeHttpBackend("ok", ns, stateURL(ns)).locks().basicAuth(stateUser, "state-password", "").lockCheck().build()
		wrongPassword := makeHttpBackend("wrong", ns, stateURL(ns)).basicAuth("intruder", "state-password", "").build()
		tlsBackend := makeHttpBackend("tls", ns, tlsStateURL(ns)).clientCertificate("client-cert").build()
		for _, b := range []*backendsv1alpha1.HttpBackend{ok, wrongPassword, tlsBackend} {
			Expect(k8sClient.Create(ctx, b)).To(Succeed())
		}
		Eventually(func(g Gomega) {
			for _, b := range []*backendsv1alpha1.HttpBackend{ok, wrongPassword, tlsBackend} {
				getObject(ctx, g, b)
				g.Expect(b.Status.ObservedGeneration).To(Equal(b.Generation))
				g.Expect(b.Status.Conditions).To(ContainElement(HaveField("Type", "StateReachable")))
			}
		}, timeout, interval).Should(Succeed())

		secrets := []string{statePassword, pemBody(suiteCerts.clientKeyPEM)}
		expectNoSecretsIn(ctx, ns, secrets)
	})
})

// withKey sets an object's namespace and name and returns it.
func withKey[T interface {
	SetNamespace(string)
	SetName(string)
}](obj T, namespace, name string) T {
	obj.SetNamespace(namespace)
	obj.SetName(name)
	return obj
}

// pemBody is the base64 body of a PEM block, the part that is secret.
func pemBody(p []byte) string {
	lines := strings.Split(strings.TrimSpace(string(p)), "\n")
	return strings.Join(lines[1:len(lines)-1], "")[:40]
}
