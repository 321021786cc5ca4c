package controllers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/stateserver"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// healsWithin bounds how long a stall may outlive its cause: a watch
// event, not a periodic retry, must bring the object back.
const healsWithin = 10 * time.Second

// stallCase causes one stall of an object and removes its cause.
type stallCase struct {
	// objects returns the objects to create, the object that stalls last;
	// it may create what the stall needs besides them.
	objects func(ctx context.Context, ns string) []client.Object
	// reason is the stall's reason.
	reason string
	// heal removes the cause.
	heal func(ctx context.Context, ns string)
}

var _ = Describe("Every stall", func() {
	var (
		ctx context.Context
		ns  string
	)

	BeforeEach(func() {
		ctx, ns = newSpec()
		startManager(ctx, ns)
	})

	password := func(ns string) *corev1.Secret {
		return makeSecret("state-password", ns, map[string]string{"password": statePassword})
	}
	httpBackend := func(ns string) *httpBackendBuilder {
		return makeHttpBackend("app", ns, stateURL(ns)).basicAuth(stateUser, "state-password", "")
	}
	create := func(ctx context.Context, obj client.Object) {
		GinkgoHelper()
		Expect(k8sClient.Create(ctx, obj)).To(Succeed())
	}
	remove := func(ctx context.Context, obj client.Object) {
		GinkgoHelper()
		Expect(k8sClient.Delete(ctx, obj)).To(Succeed())
	}
	foreignConfigMap := func(ns, name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"owner": "someone else"}}
	}
	caConfigMap := func(ns string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "state-ca", Namespace: ns}, Data: data}
	}

	DescribeTable("clears by itself, through a watch, once its cause is gone",
		func(tc stallCase) {
			objs := tc.objects(ctx, ns)
			for _, obj := range objs {
				create(ctx, obj)
			}
			stalled := objs[len(objs)-1].(statusObject)
			Eventually(func(g Gomega) {
				getObject(ctx, g, stalled)
				expectKstatusInvariants(g, stalled)
				expectCondition(g, *stalled.StatusConditions(), "Stalled", metav1.ConditionTrue, tc.reason)
			}, timeout, interval).Should(Succeed())

			By("removing the cause")
			tc.heal(ctx, ns)
			Eventually(func(g Gomega) {
				getObject(ctx, g, stalled)
				expectKstatusInvariants(g, stalled)
				expectCondition(g, *stalled.StatusConditions(), "Ready", metav1.ConditionTrue, "Succeeded")
				g.Expect(conditionOf(stalled, "Stalled")).To(BeNil())
			}, healsWithin, interval).Should(Succeed())
		},
		Entry("SecretNotFound: the Secret is created", stallCase{
			objects: func(ctx context.Context, ns string) []client.Object { return []client.Object{httpBackend(ns).build()} },
			reason:  "SecretNotFound",
			heal:    func(ctx context.Context, ns string) { create(ctx, password(ns)) },
		}),
		Entry("SecretKeyMissing: the key is added", stallCase{
			objects: func(ctx context.Context, ns string) []client.Object {
				return []client.Object{makeSecret("state-password", ns, map[string]string{"other": "x"}), httpBackend(ns).build()}
			},
			reason: "SecretKeyMissing",
			heal: func(ctx context.Context, ns string) {
				Expect(k8sClient.Patch(ctx, password(ns), client.Merge)).To(Succeed())
			},
		}),
		Entry("ConfigMapNotFound: the CA ConfigMap is created", stallCase{
			objects: func(ctx context.Context, ns string) []client.Object {
				return []client.Object{
					makeTLSSecret("client-cert", ns, suiteCerts.clientCertPEM, suiteCerts.clientKeyPEM),
					makeHttpBackend("app", ns, tlsStateURL(ns)).clientCertificate("client-cert").caFromConfigMap("state-ca").build(),
				}
			},
			reason: "ConfigMapNotFound",
			heal: func(ctx context.Context, ns string) {
				create(ctx, caConfigMap(ns, map[string]string{"ca.crt": string(suiteCerts.caPEM)}))
			},
		}),
		Entry("ConfigMapKeyMissing: the CA key is added", stallCase{
			objects: func(ctx context.Context, ns string) []client.Object {
				return []client.Object{
					makeTLSSecret("client-cert", ns, suiteCerts.clientCertPEM, suiteCerts.clientKeyPEM),
					caConfigMap(ns, map[string]string{"other": "x"}),
					makeHttpBackend("app", ns, tlsStateURL(ns)).clientCertificate("client-cert").caFromConfigMap("state-ca").build(),
				}
			},
			reason: "ConfigMapKeyMissing",
			heal: func(ctx context.Context, ns string) {
				Expect(k8sClient.Patch(ctx, caConfigMap(ns, map[string]string{"ca.crt": string(suiteCerts.caPEM)}), client.Merge)).To(Succeed())
			},
		}),
		Entry("InvalidCertificate: the client certificate is replaced", stallCase{
			objects: func(ctx context.Context, ns string) []client.Object {
				return []client.Object{
					makeTLSSecret("client-cert", ns, []byte("not a certificate"), suiteCerts.clientKeyPEM),
					caConfigMap(ns, map[string]string{"ca.crt": string(suiteCerts.caPEM)}),
					makeHttpBackend("app", ns, tlsStateURL(ns)).clientCertificate("client-cert").caFromConfigMap("state-ca").build(),
				}
			},
			reason: "InvalidCertificate",
			heal: func(ctx context.Context, ns string) {
				Expect(k8sClient.Patch(ctx, makeTLSSecret("client-cert", ns, suiteCerts.clientCertPEM, suiteCerts.clientKeyPEM), client.Merge)).To(Succeed())
			},
		}),
		Entry("NameConflict on the ConfigMap: the foreign ConfigMap is deleted", stallCase{
			objects: func(ctx context.Context, ns string) []client.Object {
				return []client.Object{password(ns), foreignConfigMap(ns, "app-backend"), httpBackend(ns).build()}
			},
			reason: "NameConflict",
			heal:   func(ctx context.Context, ns string) { remove(ctx, foreignConfigMap(ns, "app-backend")) },
		}),
		Entry("NameConflict on the credentials Secret of a CosBackend: the foreign Secret is deleted", stallCase{
			objects: func(ctx context.Context, ns string) []client.Object {
				bucket := ns + "-1250000000"
				cosServer.CreateBucket(bucket)
				return []client.Object{
					makeSecret("cos-credentials", ns, map[string]string{"secretId": cosSecretID, "secretKey": cosSecretKey}),
					makeSecret("app-backend-credentials", ns, map[string]string{"owner": "someone else"}),
					makeCosBackend("app", ns, bucket),
				}
			},
			reason: "NameConflict",
			heal: func(ctx context.Context, ns string) {
				remove(ctx, makeSecret("app-backend-credentials", ns, nil))
			},
		}),
		Entry("NameConflict on a RemoteState's ConfigMap: the foreign ConfigMap is deleted", stallCase{
			objects: func(ctx context.Context, ns string) []client.Object {
				seedState(ctx, stateURL(ns), v4State(1, `"a":{"value":"x","type":"string"}`))
				return []client.Object{password(ns), httpBackend(ns).build(), foreignConfigMap(ns, "net-outputs"),
					makeRemoteState("net", ns, "HttpBackend", "app")}
			},
			reason: "NameConflict",
			heal:   func(ctx context.Context, ns string) { remove(ctx, foreignConfigMap(ns, "net-outputs")) },
		}),
		Entry("BackendNotFound: the backend is created", stallCase{
			objects: func(ctx context.Context, ns string) []client.Object {
				seedState(ctx, stateURL(ns), v4State(1, `"a":{"value":"x","type":"string"}`))
				return []client.Object{password(ns), makeRemoteState("net", ns, "HttpBackend", "app")}
			},
			reason: "BackendNotFound",
			heal:   func(ctx context.Context, ns string) { create(ctx, httpBackend(ns).build()) },
		}),
		Entry("BackendNotReady: the backend's CA ConfigMap is created", stallCase{
			objects: func(ctx context.Context, ns string) []client.Object {
				tlsState := tlsStateURL(ns)
				seedTLSState(ctx, tlsState)
				return []client.Object{
					makeTLSSecret("client-cert", ns, suiteCerts.clientCertPEM, suiteCerts.clientKeyPEM),
					makeHttpBackend("app", ns, tlsState).clientCertificate("client-cert").caFromConfigMap("state-ca").build(),
					makeRemoteState("net", ns, "HttpBackend", "app"),
				}
			},
			reason: "BackendNotReady",
			heal: func(ctx context.Context, ns string) {
				create(ctx, caConfigMap(ns, map[string]string{"ca.crt": string(suiteCerts.caPEM)}))
			},
		}),
	)

	It("moves a RemoteState's outputs when its target is renamed, removing the old objects", func() {
		create(ctx, password(ns))
		seedState(ctx, stateURL(ns), v4State(1, `"a":{"value":"x","type":"string"},"b":{"value":"y","type":"string","sensitive":true}`))
		create(ctx, httpBackend(ns).build())
		remote := makeRemoteState("net", ns, "HttpBackend", "app")
		create(ctx, remote)
		Eventually(func(g Gomega) {
			getObject(ctx, g, remote)
			expectCondition(g, remote.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
		}, timeout, interval).Should(Succeed())
		renderedConfigMap(ctx, Default, ns, "net-outputs")
		renderedSecret(ctx, Default, ns, "net-outputs")

		updateSpec(ctx, remote, func() {
			remote.Spec.Target = backendsv1alpha1.RemoteStateTarget{ConfigMapName: "net-plain", SecretName: "net-sensitive"}
		})
		Eventually(func(g Gomega) {
			getObject(ctx, g, remote)
			g.Expect(remote.Status.Rendered).To(Equal(&backendsv1alpha1.RenderedObjects{ConfigMapName: "net-plain", SecretName: "net-sensitive"}))
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "net-outputs"}, &corev1.ConfigMap{})).NotTo(Succeed())
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "net-outputs"}, &corev1.Secret{})).NotTo(Succeed())
		}, timeout, interval).Should(Succeed())
		Expect(renderedConfigMap(ctx, Default, ns, "net-plain").Data).To(HaveKeyWithValue("a", "x"))
		Expect(renderedSecret(ctx, Default, ns, "net-sensitive").Data).To(HaveKeyWithValue("b", []byte("y")))
	})
})

var _ = Describe("A status patch that conflicts", func() {
	It("is retried without a reconciler error, and the backend is probed once", func() {
		ctx, ns := newSpec()
		logs := &testtools.SyncBuffer{}
		manager := startManagerLogging(ctx, []string{ns}, zap.New(zap.WriteTo(logs), zap.UseDevMode(true), zap.Level(zapcore.InfoLevel)))
		// The first status patches of each backend meet a newer object,
		// as when the cache has not caught up with the manager's own
		// writes yet.
		var mu sync.Mutex
		conflicts := map[string]int{}
		manager.answerWith(func(req *http.Request) *http.Response {
			if req.Method != http.MethodPatch || !strings.HasSuffix(req.URL.Path, "/status") {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if conflicts[req.URL.Path] >= 2 {
				return nil
			}
			conflicts[req.URL.Path]++
			return conflictResponse(req)
		})
		createPassword(ctx, ns)
		path := "/state/" + ns
		stateServer.InjectFault(stateserver.Fault{Method: "NONE", Path: path}) // starts the request counters
		DeferCleanup(stateServer.ClearFaults)
		before := stateServer.Requests(http.MethodGet, path)

		backends := make([]*backendsv1alpha1.HttpBackend, 3)
		for i := range backends {
			backends[i] = makeHttpBackend(fmt.Sprintf("app-%d", i), ns, stateURL(ns)).basicAuth(stateUser, "state-password", "").build()
			Expect(k8sClient.Create(ctx, backends[i])).To(Succeed())
		}
		for _, b := range backends {
			Eventually(func(g Gomega) {
				getObject(ctx, g, b)
				expectCondition(g, b.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			}, timeout, interval).Should(Succeed())
		}
		Expect(conflicts).To(HaveLen(len(backends)), "every backend met conflicts")
		Consistently(func() int { return stateServer.Requests(http.MethodGet, path) - before }, 2*time.Second, interval).
			Should(Equal(len(backends)), "probes of %d new backends", len(backends))
		Expect(logs.String()).NotTo(ContainSubstring("Reconciler error"))
	})
})

// conflictResponse is the API server's answer to a write computed from an
// object that is no longer the latest.
func conflictResponse(req *http.Request) *http.Response {
	body := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"Conflict","code":409,` +
		`"message":"Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again"}`
	return &http.Response{
		StatusCode: http.StatusConflict, Status: "409 Conflict", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req,
	}
}

// conditionOf returns the condition t of obj, nil when absent.
func conditionOf(obj statusObject, t string) *metav1.Condition {
	return findCondition(*obj.StatusConditions(), t)
}

// seedTLSState writes a state through the mutual TLS state server.
func seedTLSState(ctx context.Context, address string) {
	GinkgoHelper()
	cfg := stateclient.DefaultConfig(address)
	cfg.ClientCertificatePEM, cfg.ClientPrivateKeyPEM = suiteCerts.clientCertPEM, suiteCerts.clientKeyPEM
	cfg.ClientCACertificatePEM = suiteCerts.caPEM
	sc, err := stateclient.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	Expect(sc.Update(ctx, v4State(1, `"a":{"value":"x","type":"string"}`))).To(Succeed())
}
