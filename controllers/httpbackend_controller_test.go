package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/testing/builders"
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
	Expect(basicAuthClient(address).Update(ctx, data)).To(Succeed())
}

// basicAuthClient is a state client of address with the suite's basic
// auth.
func basicAuthClient(address string) *stateclient.Client {
	cfg := stateclient.DefaultConfig(address)
	cfg.Username, cfg.Password = stateUser, statePassword
	sc, err := stateclient.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	return sc
}

// holdLock takes the state's lock as another client would and returns its ID.
func holdLock(ctx context.Context, address string) string {
	return holdLockAs(ctx, address, true, "alice@laptop")
}

// holdLockAs takes the state's lock as the client who would, with the
// suite's basic auth or without, and returns its ID.
func holdLockAs(ctx context.Context, address string, basicAuth bool, who string) string {
	GinkgoHelper()
	id, err := lockingClient(address, basicAuth).Lock(ctx, stateclient.NewLockInfo("OperationTypeApply", who))
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
	spec := eachSpecWithManager()

	It("renders the backend, probes the state and reports it Ready", func() {
		ctx, ns := spec.ctx, spec.ns
		createPassword(ctx, ns)
		seedState(ctx, stateURL(ns), v4State(7, `"a":{"value":"x","type":"string"},"b":{"value":1,"type":"number","sensitive":true}`))
		backend := makeStateBackend("app", ns).Locks().Obj()
		start := time.Now()
		create(ctx, backend)

		eventually(ctx, backend, func(g Gomega) {
			expectKstatusInvariants(g, backend)
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			expectCondition(g, backend.Status.Conditions, "StateReachable", metav1.ConditionTrue, "Reachable")
			g.Expect(backend.Status.ObservedGeneration).To(Equal(backend.Generation))
		})
		GinkgoWriter.Printf("apply to Ready: %s\n", time.Since(start))

		Expect(backend.Status.State).To(Equal(&backendsv1alpha1.StateSummary{
			Present: true, Serial: 7, Lineage: "lineage-1", TerraformVersion: "1.5.7",
			SizeBytes: int64(len(v4State(7, `"a":{"value":"x","type":"string"},"b":{"value":1,"type":"number","sensitive":true}`))), OutputCount: 2,
		}))
		Expect(backend.Status.Rendered).To(Equal(&backendsv1alpha1.RenderedObjects{ConfigMapName: "app-backend", SecretName: "app-backend-credentials", CompatibleRunners: everyRunner}))
		locked := apimeta.FindStatusCondition(backend.Status.Conditions, "Locked")
		Expect(locked).To(HaveField("Reason", backendsv1alpha1.LockNotCheckedReason), "no lock check was asked for")
		Expect(locked.Status).To(Equal(metav1.ConditionUnknown))
		Expect(backend.Status.Locked).To(Equal("Unchecked"))

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
		ctx, ns := spec.ctx, spec.ns
		backend := makeTLSStateBackend("tls", ns).Obj()
		create(ctx, suiteClientCert(ns), suiteCAConfigMap(ns), backend)

		eventually(ctx, backend, func(g Gomega) {
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			expectCondition(g, backend.Status.Conditions, "StateReachable", metav1.ConditionTrue, "Reachable")
		})
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
		func(setup func(ns string) *backendsv1alpha1.HttpBackend, condType string, status metav1.ConditionStatus, reason string, message ...string) {
			expectExplained(spec.ctx, setup(spec.ns), condType, status, reason, message...)
		},
		Entry("a missing password Secret", func(ns string) *backendsv1alpha1.HttpBackend {
			return builders.MakeHttpBackend("b", ns, stateURL(ns)).BasicAuth(stateUser, "missing", "").Obj()
		}, "Stalled", metav1.ConditionTrue, "SecretNotFound", "Secret ", "does not exist in namespace ", "references name objects of the backend's own namespace"),
		Entry("a missing password key", func(ns string) *backendsv1alpha1.HttpBackend {
			create(spec.ctx, builders.MakeSecret("pw", ns).Data(map[string]string{"other": "x"}).Obj())
			return builders.MakeHttpBackend("b", ns, stateURL(ns)).BasicAuth(stateUser, "pw", "token").Obj()
		}, "Stalled", metav1.ConditionTrue, "SecretKeyMissing", `has no key "token" (its key: other): add the key, or set spec.passwordSecretRef.key`),
		Entry("a CA bundle without a certificate", func(ns string) *backendsv1alpha1.HttpBackend {
			create(spec.ctx, builders.MakeSecret("ca", ns).Data(map[string]string{"ca.crt": "not a pem"}).Obj())
			return builders.MakeHttpBackend("b", ns, tlsStateURL(ns)).CAFromSecret("ca", "ca.crt").Obj()
		}, "Stalled", metav1.ConditionTrue, "InvalidCertificate", "holds no PEM certificate: put the PEM certificates in it"),
		Entry("a client key that does not match the certificate", func(ns string) *backendsv1alpha1.HttpBackend {
			create(spec.ctx, builders.MakeSecret("cert", ns).TLS(suiteCerts.clientCertPEM, suiteCerts.otherKeyPEM).Obj())
			return builders.MakeHttpBackend("b", ns, tlsStateURL(ns)).ClientCertificate("cert").Obj()
		}, "Stalled", metav1.ConditionTrue, "InvalidCertificate", "do not match"),
		Entry("a missing CA ConfigMap", func(ns string) *backendsv1alpha1.HttpBackend {
			return builders.MakeHttpBackend("b", ns, tlsStateURL(ns)).CAFromConfigMap("nope").Obj()
		}, "Stalled", metav1.ConditionTrue, "ConfigMapNotFound", "ConfigMap ", "/nope referenced by spec.tls.caCertificate does not exist in namespace "),
		Entry("a wrong password", func(ns string) *backendsv1alpha1.HttpBackend {
			create(spec.ctx, builders.MakeSecret("pw", ns).Data(map[string]string{"password": "wrong"}).Obj())
			return builders.MakeHttpBackend("b", ns, stateURL(ns)).BasicAuth(stateUser, "pw", "").Obj()
		}, "StateReachable", metav1.ConditionFalse, "Forbidden", "invalid auth", "Check that this user may read the state"),
		Entry("no credentials", func(ns string) *backendsv1alpha1.HttpBackend {
			return builders.MakeHttpBackend("b", ns, stateURL(ns)).Obj()
		}, "StateReachable", metav1.ConditionFalse, "Unauthorized", "requires auth", "Set the backend's spec.username and spec.passwordSecretRef"),
		Entry("a server that refuses the request", func(ns string) *backendsv1alpha1.HttpBackend {
			stateServer.InjectFault(stateserverFault("/state/"+ns, 403))
			return builders.MakeHttpBackend("b", ns, stateURL(ns)).Obj()
		}, "StateReachable", metav1.ConditionFalse, "Forbidden", "invalid auth"),
		Entry("an untrusted server certificate", func(ns string) *backendsv1alpha1.HttpBackend {
			create(spec.ctx, builders.MakeSecret("ca", ns).Data(map[string]string{"ca.crt": string(suiteCerts.otherCAPEM)}).Obj())
			return builders.MakeHttpBackend("b", ns, tlsStateURL(ns)).CAFromSecret("ca", "ca.crt").Retries(0, 0, 0).Obj()
		}, "StateReachable", metav1.ConditionFalse, "TLSError", "certificate", "Check that spec.tls.caCertificate holds the CA"),
		Entry("an address nobody listens on", func(ns string) *backendsv1alpha1.HttpBackend {
			return builders.MakeHttpBackend("b", ns, "http://127.0.0.1:1/state/"+ns).Retries(0, 0, 0).Obj()
		}, "StateReachable", metav1.ConditionFalse, "Unreachable", "127.0.0.1:1", "Check from inside the cluster"),
		Entry("a server error", func(ns string) *backendsv1alpha1.HttpBackend {
			stateServer.InjectFault(stateserverFault("/state/"+ns, 500))
			return builders.MakeHttpBackend("b", ns, stateURL(ns)).Retries(0, 0, 0).Obj()
		}, "StateReachable", metav1.ConditionFalse, "ServerError", "500", "Check its log for this request"),
	)

	It("keeps the last good render when a Secret breaks, and follows its rotation", func() {
		ctx, ns := spec.ctx, spec.ns
		createPassword(ctx, ns)
		backend := builders.MakeHttpBackend("app", ns, stateURL(ns)).BasicAuth(stateUser, "state-password", "password").Obj()
		create(ctx, backend)
		eventuallyReady(ctx, backend)
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
		eventually(ctx, backend, func(g Gomega) {
			expectKstatusInvariants(g, backend)
			expectCondition(g, backend.Status.Conditions, "Stalled", metav1.ConditionTrue, "SecretNotFound")
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionFalse, "SecretNotFound")
		})
		Consistently(func(g Gomega) {
			g.Expect(renderedSecret(ctx, g, ns, "app-backend-credentials").Data).To(HaveKeyWithValue("TF_HTTP_PASSWORD", []byte(rotated)))
			g.Expect(renderedConfigMap(ctx, g, ns, "app-backend").Data).To(Equal(goodConfigMap.Data))
		}, 2*time.Second, interval).Should(Succeed())

		By("creating it again")
		createPassword(ctx, ns)
		eventually(ctx, backend, func(g Gomega) { expectRecovered(ctx, g, backend, statePassword) })
	})

	It("shows the lock holder and releases it only for the ID forceUnlock names", func() {
		ctx, ns := spec.ctx, spec.ns
		createPassword(ctx, ns)
		holder := holdLock(ctx, stateURL(ns))
		backend := makeStateBackend("app", ns).Locks().LockCheck().Obj()
		create(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "LockHeld")
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			g.Expect(backend.Status.Lock).NotTo(BeNil())
			g.Expect(backend.Status.Lock.ID).To(Equal(holder))
			g.Expect(backend.Status.Lock.Who).To(Equal("alice@laptop"))
			g.Expect(backend.Status.Lock.Operation).To(Equal("OperationTypeApply"))
		})

		By("naming another ID")
		updateSpec(ctx, backend, func() { backend.Spec.ForceUnlock = &backendsv1alpha1.ForceUnlockSpec{LockID: "not-the-holder"} })
		eventually(ctx, backend, func(g Gomega) {
			g.Expect(backend.Status.ObservedGeneration).To(Equal(backend.Generation))
			expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "ForceUnlockSkipped",
				"does not match the holder "+holder)
		})

		By("naming the holder")
		updateSpec(ctx, backend, func() { backend.Spec.ForceUnlock.LockID = holder })
		eventuallyForceUnlocked(ctx, backend, holder)
		eventuallyEvent(ctx, ns, "ForceUnlocked")

		By("locking again: the lock is free, a stale forceUnlock does nothing")
		next := holdLock(ctx, stateURL(ns))
		Expect(next).NotTo(Equal(holder))
	})

	It("writes nothing on a resync that finds nothing new", func() {
		ctx, ns, writes := spec.ctx, spec.ns, spec.writes
		createPassword(ctx, ns)
		backend := makeStateBackend("app", ns).Locks().LockCheck().Obj()
		create(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionFalse, "NotLocked")
		})
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
		ctx, ns := spec.ctx, spec.ns
		backend := builders.MakeHttpBackend("app", ns, stateURL(ns)).ConfigMapName("taken").Obj()
		create(ctx, builders.MakeConfigMap("taken", ns).Data(map[string]string{"mine": "yes"}).Obj(), backend)
		eventuallyCondition(ctx, backend, "Stalled", metav1.ConditionTrue, "NameConflict")
		Expect(renderedConfigMap(ctx, Default, ns, "taken").Data).To(Equal(map[string]string{"mine": "yes"}))
	})

	It("never puts secret material in a ConfigMap, event, condition or status", func() {
		ctx, ns := spec.ctx, spec.ns
		createPassword(ctx, ns)
		ok := makeStateBackend("ok", ns).Locks().LockCheck().Obj()
		wrongPassword := builders.MakeHttpBackend("wrong", ns, stateURL(ns)).BasicAuth("intruder", "state-password", "").Obj()
		tlsBackend := builders.MakeHttpBackend("tls", ns, tlsStateURL(ns)).ClientCertificate("client-cert").Obj()
		create(ctx, suiteClientCert(ns), ok, wrongPassword, tlsBackend)
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
