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
	"github.com/infrastate/backend-operator/internal/testing/builders"
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
	spec := eachSpecWithManager()

	remove := func(ctx context.Context, obj client.Object) {
		GinkgoHelper()
		Expect(k8sClient.Delete(ctx, obj)).To(Succeed())
	}
	foreignConfigMap := func(ns, name string) *corev1.ConfigMap {
		return builders.MakeConfigMap(name, ns).Data(map[string]string{"owner": "someone else"}).Obj()
	}

	DescribeTable("clears by itself, through a watch, once its cause is gone",
		func(tc stallCase) {
			ctx, ns := spec.ctx, spec.ns
			objs := tc.objects(ctx, ns)
			create(ctx, objs...)
			stalled := objs[len(objs)-1].(statusObject)
			eventually(ctx, stalled, func(g Gomega) {
				expectKstatusInvariants(g, stalled)
				expectCondition(g, *stalled.StatusConditions(), "Stalled", metav1.ConditionTrue, tc.reason)
			})

			By("removing the cause")
			tc.heal(ctx, ns)
			eventuallyWithin(ctx, healsWithin, stalled, func(g Gomega) {
				expectKstatusInvariants(g, stalled)
				expectCondition(g, *stalled.StatusConditions(), "Ready", metav1.ConditionTrue, "Succeeded")
				g.Expect(conditionOf(stalled, "Stalled")).To(BeNil())
			})
		},
		Entry("SecretNotFound: the Secret is created", stallCase{
			objects: func(_ context.Context, ns string) []client.Object {
				return []client.Object{makeStateBackend("app", ns).Obj()}
			},
			reason: "SecretNotFound",
			heal:   func(ctx context.Context, ns string) { create(ctx, suitePassword(ns)) },
		}),
		Entry("SecretKeyMissing: the key is added", stallCase{
			objects: func(_ context.Context, ns string) []client.Object {
				return []client.Object{builders.MakeSecret("state-password", ns).Data(map[string]string{"other": "x"}).Obj(), makeStateBackend("app", ns).Obj()}
			},
			reason: "SecretKeyMissing",
			heal: func(ctx context.Context, ns string) {
				Expect(k8sClient.Patch(ctx, suitePassword(ns), client.Merge)).To(Succeed())
			},
		}),
		Entry("ConfigMapNotFound: the CA ConfigMap is created", stallCase{
			objects: func(_ context.Context, ns string) []client.Object {
				return []client.Object{suiteClientCert(ns), makeTLSStateBackend("app", ns).Obj()}
			},
			reason: "ConfigMapNotFound",
			heal:   func(ctx context.Context, ns string) { create(ctx, suiteCAConfigMap(ns)) },
		}),
		Entry("ConfigMapKeyMissing: the CA key is added", stallCase{
			objects: func(_ context.Context, ns string) []client.Object {
				return []client.Object{suiteClientCert(ns), builders.MakeConfigMap("state-ca", ns).Data(map[string]string{"other": "x"}).Obj(), makeTLSStateBackend("app", ns).Obj()}
			},
			reason: "ConfigMapKeyMissing",
			heal: func(ctx context.Context, ns string) {
				Expect(k8sClient.Patch(ctx, suiteCAConfigMap(ns), client.Merge)).To(Succeed())
			},
		}),
		Entry("InvalidCertificate: the client certificate is replaced", stallCase{
			objects: func(_ context.Context, ns string) []client.Object {
				return []client.Object{
					builders.MakeSecret("client-cert", ns).TLS([]byte("not a certificate"), suiteCerts.clientKeyPEM).Obj(),
					suiteCAConfigMap(ns),
					makeTLSStateBackend("app", ns).Obj(),
				}
			},
			reason: "InvalidCertificate",
			heal: func(ctx context.Context, ns string) {
				Expect(k8sClient.Patch(ctx, suiteClientCert(ns), client.Merge)).To(Succeed())
			},
		}),
		Entry("NameConflict on the ConfigMap: the foreign ConfigMap is deleted", stallCase{
			objects: func(_ context.Context, ns string) []client.Object {
				return []client.Object{suitePassword(ns), foreignConfigMap(ns, "app-backend"), makeStateBackend("app", ns).Obj()}
			},
			reason: "NameConflict",
			heal:   func(ctx context.Context, ns string) { remove(ctx, foreignConfigMap(ns, "app-backend")) },
		}),
		Entry("NameConflict on the credentials Secret of a CosBackend: the foreign Secret is deleted", stallCase{
			objects: func(_ context.Context, ns string) []client.Object {
				cosServer.CreateBucket(cosBucket(ns))
				return []client.Object{
					cosCredentials(ns),
					builders.MakeSecret("app-backend-credentials", ns).Data(map[string]string{"owner": "someone else"}).Obj(),
					makeCosStateBackend("app", ns, cosBucket(ns)).Obj(),
				}
			},
			reason: "NameConflict",
			heal: func(ctx context.Context, ns string) {
				remove(ctx, builders.MakeSecret("app-backend-credentials", ns).Obj())
			},
		}),
		Entry("NameConflict on a RemoteState's ConfigMap: the foreign ConfigMap is deleted", stallCase{
			objects: func(ctx context.Context, ns string) []client.Object {
				seedState(ctx, stateURL(ns), v4State(1, `"a":{"value":"x","type":"string"}`))
				return []client.Object{suitePassword(ns), makeStateBackend("app", ns).Obj(), foreignConfigMap(ns, "net-outputs"),
					builders.MakeRemoteState("net", ns, "HttpBackend", "app").Obj()}
			},
			reason: "NameConflict",
			heal:   func(ctx context.Context, ns string) { remove(ctx, foreignConfigMap(ns, "net-outputs")) },
		}),
		Entry("BackendNotFound: the backend is created", stallCase{
			objects: func(ctx context.Context, ns string) []client.Object {
				seedState(ctx, stateURL(ns), v4State(1, `"a":{"value":"x","type":"string"}`))
				return []client.Object{suitePassword(ns), builders.MakeRemoteState("net", ns, "HttpBackend", "app").Obj()}
			},
			reason: "BackendNotFound",
			heal:   func(ctx context.Context, ns string) { create(ctx, makeStateBackend("app", ns).Obj()) },
		}),
		Entry("BackendNotReady: the backend's CA ConfigMap is created", stallCase{
			objects: func(ctx context.Context, ns string) []client.Object {
				seedTLSState(ctx, tlsStateURL(ns))
				return []client.Object{suiteClientCert(ns), makeTLSStateBackend("app", ns).Obj(), builders.MakeRemoteState("net", ns, "HttpBackend", "app").Obj()}
			},
			reason: "BackendNotReady",
			heal:   func(ctx context.Context, ns string) { create(ctx, suiteCAConfigMap(ns)) },
		}),
	)

	It("moves a RemoteState's outputs when its target is renamed, removing the old objects", func() {
		ctx, ns := spec.ctx, spec.ns
		createPassword(ctx, ns)
		seedState(ctx, stateURL(ns), v4State(1, `"a":{"value":"x","type":"string"},"b":{"value":"y","type":"string","sensitive":true}`))
		remote := builders.MakeRemoteState("net", ns, "HttpBackend", "app").Obj()
		create(ctx, makeStateBackend("app", ns).Obj(), remote)
		eventuallyReady(ctx, remote)
		renderedConfigMap(ctx, Default, ns, "net-outputs")
		renderedSecret(ctx, Default, ns, "net-outputs")

		updateSpec(ctx, remote, func() {
			remote.Spec.Target = backendsv1alpha1.RemoteStateTarget{ConfigMapName: "net-plain", SecretName: "net-sensitive"}
		})
		eventually(ctx, remote, func(g Gomega) {
			g.Expect(remote.Status.Rendered).To(Equal(&backendsv1alpha1.RenderedObjects{ConfigMapName: "net-plain", SecretName: "net-sensitive"}))
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "net-outputs"}, &corev1.ConfigMap{})).NotTo(Succeed())
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "net-outputs"}, &corev1.Secret{})).NotTo(Succeed())
		})
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
			backends[i] = makeStateBackend(fmt.Sprintf("app-%d", i), ns).Obj()
			create(ctx, backends[i])
		}
		for _, b := range backends {
			eventuallyReady(ctx, b)
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
