package controllers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/logging"
	"github.com/infrastate/backend-operator/internal/testing/builders"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// echoServer answers with everything it received: the method, the URL with
// its query, every header (Authorization included, and decoded), and the
// body, in the body and a header of every answer. By path: /lock answers a
// LOCK with 423 and a LockInfo whose Who and Info hold the echo; /error
// answers 500; /redirect answers 302 to another host; anything else answers
// 200 with a body that is not a state.
func echoServer() string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		user, pass, _ := r.BasicAuth()
		echo := fmt.Sprintf("%s %s user=%s password=%s headers=%v body=%s", r.Method, r.URL.String(), user, pass, r.Header, body)
		w.Header().Set("X-Echo", strings.ReplaceAll(echo, "\n", " "))
		switch {
		case strings.HasSuffix(r.URL.Path, "/lock") && r.Method == "LOCK":
			holder, _ := json.Marshal(map[string]string{"ID": "echo-lock", "Operation": "OperationTypeApply", "Who": echo, "Info": echo,
				"Version": "1.5.7", "Created": time.Now().UTC().Format(time.RFC3339Nano), "Path": ""})
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusLocked)
			_, _ = w.Write(holder)
		case strings.HasSuffix(r.URL.Path, "/error"):
			http.Error(w, echo, http.StatusInternalServerError)
		case strings.HasSuffix(r.URL.Path, "/redirect"):
			http.Redirect(w, r, "http://127.0.0.2:1/elsewhere?"+r.URL.RawQuery+"&echo="+pass, http.StatusFound)
		default:
			_, _ = io.WriteString(w, "<html>"+echo+"</html>")
		}
	}))
	DeferCleanup(srv.Close)
	return srv.URL
}

// printerColumns returns the table kubectl get shows for a kind in a
// namespace, as the API server renders it from the printer columns.
func printerColumns(ctx context.Context, resource, namespace string) string {
	httpClient, err := rest.HTTPClientFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		strings.TrimSuffix(cfg.Host, "/")+"/apis/backends.infrastate.io/v1alpha1/namespaces/"+namespace+"/"+resource, http.NoBody)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	table, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK), string(table))
	Expect(string(table)).To(ContainSubstring(`"kind":"Table"`))
	return string(table)
}

var _ = Describe("The secret scan", func() {
	It("finds no credential in printer columns, conditions, events, status or logs, even from a server that echoes them", func() {
		ctx, ns := newSpec()
		logs := &testtools.SyncBuffer{}
		// As cmd/manager builds its logger, at the highest level zap allows.
		debug := zap.New(zap.WriteTo(logs), zap.UseDevMode(true), zap.Level(zapcore.Level(-10)))
		startManagerLogging(ctx, []string{ns}, logging.Bounded(debug, logging.MaxVerbosity))

		const queryValue = "QuErYvAlUe-5ecret-7"
		echo := echoServer()
		createPassword(ctx, ns)
		create(ctx, suiteClientCert(ns))
		backend := func(name, path string) *builders.HttpBackendWrapper {
			return builders.MakeHttpBackend(name, ns, echo+path+"?session="+queryValue).BasicAuth(stateUser, "state-password", "").Retries(0, 0, 0)
		}
		lock := backend("lock", "/page").LockAddresses(echo+"/lock?session="+queryValue, echo+"/unlock?session="+queryValue)
		backends := []*backendsv1alpha1.HttpBackend{
			backend("page", "/page").Obj(),
			backend("error", "/error").Obj(),
			backend("redirect", "/redirect").Obj(),
			lock.LockCheck().Obj(),
			builders.MakeHttpBackend("tls", ns, tlsStateURL(ns)+"?session="+queryValue).ClientCertificate("client-cert").Obj(),
		}
		for _, b := range backends {
			create(ctx, b)
		}
		Eventually(func(g Gomega) {
			for _, b := range backends {
				getObject(ctx, g, b)
				g.Expect(b.Status.ObservedGeneration).To(Equal(b.Generation), b.Name)
				g.Expect(b.Status.Conditions).To(ContainElement(HaveField("Type", "StateReachable")), b.Name)
			}
			expectCondition(g, backends[3].Status.Conditions, "Locked", metav1.ConditionTrue, "LockHeld")
		}, timeout, interval).Should(Succeed())
		Expect(backends[3].Status.Lock.Who).To(ContainSubstring("[redacted]"), "the echoed holder is recorded, without what the operator sent")

		basic := base64.StdEncoding.EncodeToString([]byte(stateUser + ":" + statePassword))
		credentials := []string{statePassword, basic, pemBody(suiteCerts.clientKeyPEM)}

		By("printer columns and rendered ConfigMaps: no credential")
		for _, doc := range []string{printerColumns(ctx, "httpbackends", ns), marshal(listConfigMaps(ctx, ns))} {
			for _, secret := range credentials {
				Expect(doc).NotTo(ContainSubstring(secret))
			}
		}
		By("conditions, status, events and debug logs: no credential and no query value")
		documents := map[string]string{"events": marshal(listEvents(ctx, ns)), "logs": logs.String()}
		for _, b := range backends {
			documents["status of "+b.Name] = marshal(b.Status)
		}
		Expect(documents["logs"]).To(ContainSubstring("stateclient"), "the logs must hold the client's debug lines")
		for where, doc := range documents {
			for _, secret := range append(credentials, queryValue) {
				if i := strings.Index(doc, secret); i >= 0 {
					Fail(fmt.Sprintf("%s holds the secret %q: ...%s...", where, secret, doc[max(0, i-300):min(len(doc), i+100)]))
				}
			}
		}
	})
})

func marshal(v any) string {
	data, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return string(data)
}

func listConfigMaps(ctx context.Context, ns string) *corev1.ConfigMapList {
	list := &corev1.ConfigMapList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	return list
}

func listEvents(ctx context.Context, ns string) []any {
	events, core := &eventsv1.EventList{}, &corev1.EventList{}
	Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
	Expect(k8sClient.List(ctx, core, client.InNamespace(ns))).To(Succeed())
	return []any{events, core}
}
