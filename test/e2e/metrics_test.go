package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos/costest"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

var _ = Describe("Metrics and alerts", func() {
	It("serve every series and label the chart's alerts read, to a metrics reader only", func(ctx SpecContext) {
		ns := newNamespace(ctx, "metrics")

		By("giving a scraper a ServiceAccount bound to the shipped metrics-reader ClusterRole (" + managerID.metricsReader + "), and a stranger one bound to nothing")
		kc.apply(ctx, ns, fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata:
  name: prometheus
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: stranger
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: %[1]s-metrics-reader
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: %[2]s
subjects:
  - kind: ServiceAccount
    name: prometheus
    namespace: %[1]s
`, ns, managerID.metricsReader))
		DeferCleanup(func(ctx SpecContext) {
			kc.must(ctx, "", "delete", "clusterrolebinding", ns+"-metrics-reader")
		})
		dir := GinkgoT().TempDir()
		scraper := serviceAccountToken(ctx, ns, "prometheus", filepath.Join(dir, "prometheus.kubeconfig"))
		stranger := serviceAccountToken(ctx, ns, "stranger", filepath.Join(dir, "stranger.kubeconfig"))

		By("a state server holding a state and a lock a crashed run left behind two hours ago")
		server := startStateServer(stateServerOptions{dataDir: filepath.Join(dir, "states")})
		DeferCleanup(server.stop)
		cfg := stateclient.DefaultConfig(server.stateURL("app"))
		cfg.LockAddress, cfg.UnlockAddress = cfg.Address, cfg.Address
		sc, err := stateclient.New(cfg)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(sc.CloseIdleConnections)
		Expect(sc.Update(ctx, []byte(`{"version":4,"terraform_version":"1.5.7","serial":1,"lineage":"metrics",`+
			`"outputs":{"vpc_id":{"value":"vpc-0a1b","type":"string"}},"resources":[],"check_results":null}`))).To(Succeed())
		_, err = sc.Lock(ctx, stateclient.LockInfo{
			ID: uuid.NewString(), Operation: "OperationTypeApply", Who: "ci-runner@build-9", Version: "1.5.7",
			Created: time.Now().Add(-2 * time.Hour).UTC(),
		})
		Expect(err).NotTo(HaveOccurred())

		By("a COS bucket for state histories, and one that refuses writes")
		cosDouble := costest.NewServer(nil)
		DeferCleanup(cosDouble.Close)
		cosDouble.AddCredentials("AKIDMETRICS", "metrics-secret-key")
		cosDouble.CreateBucket("history-1250000000")
		cosDouble.CreateBucket("readonly-1250000000")
		cosDouble.DenyWrites("readonly-1250000000", true)

		By("running the manager with its metrics endpoint as shipped: HTTPS, authentication and authorization")
		metricsAddress := freeLoopbackAddress(ctx)
		started := time.Now()
		mgr := startManager(ns, "--metrics-bind-address", metricsAddress, "--cos-service-url="+cosDouble.ServiceURL().String())
		DeferCleanup(mgr.stop)

		By("a backend holding a stale lock, one that cannot be reached, and a RemoteState that publishes")
		locked := makeBackend("locked", server.stateURL("app")).Locks().LockCheck().
			LockPolicy(backendsv1alpha1.LockPolicy{StaleAfter: &metav1.Duration{Duration: time.Minute}}).Obj()
		gone := makeBackend("gone", "http://"+freeLoopbackAddress(ctx)+"/state/gone").RetryMax(0).Obj()
		remote := builders.MakeRemoteState("outputs", "", backendsv1alpha1.HttpBackendKind, "locked").ProbeInterval(10 * time.Second).Obj()
		kc.apply(ctx, ns, manifestOf(locked, gone, remote))
		kc.must(ctx, ns, "wait", "--for=condition=Locked", "httpbackend/locked", "--timeout=60s")
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "remotestate/outputs", "--timeout=60s")

		By("a StateHistory that keeps the state, and one whose bucket refuses it")
		kc.apply(ctx, ns, historiesOf("locked", map[string]string{"kept": "history-1250000000", "refused": "readonly-1250000000"}))
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "statehistory/kept", "--timeout=60s")
		Eventually(func(g Gomega) {
			_, reason, _ := kc.condition(ctx, ns, "statehistory/refused", backendsv1alpha1.SnapshotsReadyCondition)
			g.Expect(reason).To(Equal(backendsv1alpha1.DestinationRefusedReason))
		}).WithTimeout(probeTimeout).Should(Succeed())

		By("refusing a scrape without a token, one with a token the API server did not issue, and one whose ServiceAccount may not GET /metrics")
		Expect(scrapeStatus(ctx, metricsAddress, "")).To(Equal(http.StatusUnauthorized))
		Expect(scrapeStatus(ctx, metricsAddress, forgedToken(scraper))).To(Equal(http.StatusUnauthorized))
		Expect(scrapeStatus(ctx, metricsAddress, stranger)).To(Equal(http.StatusForbidden))

		By("logging, as JSON, the TLS handshake a plain HTTP scrape fails")
		// net/http's server logs through the standard library's log, which
		// the manager sends to its structured logger (expectStructuredLogs,
		// when the manager stops, fails on any other line).
		plain, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+metricsAddress+"/metrics", http.NoBody)
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.DefaultClient.Do(plain)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Body.Close()).To(Succeed())
		Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
		mgr.waitForLog(regexp.MustCompile(`"msg":"http: TLS handshake error from 127\.0\.0\.1:\d+: client sent an HTTP request to an HTTPS server`))

		By("serving the series of every object to the metrics reader")
		var families map[string]*dto.MetricFamily
		object := func(name string) map[string]string { return map[string]string{"namespace": ns, "name": name} }
		Eventually(func(g Gomega) {
			families = scrape(ctx, g, metricsAddress, scraper)
			g.Expect(seriesValue(families, "infrastate_backend_reachable", object("gone"))).To(HaveValue(BeEquivalentTo(0)))
			g.Expect(seriesValue(families, "infrastate_backend_reachable", object("locked"))).To(HaveValue(BeEquivalentTo(1)))
			g.Expect(seriesValue(families, "infrastate_backend_lock_stale_after_seconds", object("locked"))).To(HaveValue(BeEquivalentTo(60)))
			g.Expect(seriesValue(families, "infrastate_state_lock_age_seconds", object("locked"))).To(HaveValue(BeNumerically(">", 7000)))
			g.Expect(seriesValue(families, "infrastate_remotestate_refresh_interval_seconds", object("outputs"))).To(HaveValue(BeEquivalentTo(10)))
			g.Expect(seriesValue(families, "infrastate_remotestate_last_success_timestamp_seconds", object("outputs"))).
				To(HaveValue(BeNumerically(">=", float64(started.Unix()))))
			g.Expect(seriesValue(families, "controller_runtime_reconcile_errors_total", map[string]string{"controller": "remotestate"})).
				NotTo(BeNil())
			g.Expect(seriesValue(families, "infrastate_statehistory_snapshots", object("kept"))).To(HaveValue(BeEquivalentTo(1)))
			g.Expect(seriesValue(families, "infrastate_statehistory_newest_kept_timestamp_seconds", object("kept"))).
				To(HaveValue(BeNumerically(">=", float64(started.Unix()))))
			g.Expect(seriesValue(families, "infrastate_statehistory_failures_total",
				map[string]string{"namespace": ns, "name": "refused", "reason": backendsv1alpha1.DestinationRefusedReason})).To(HaveValue(BeNumerically(">=", 1)))
		}).WithTimeout(probeTimeout).Should(Succeed())
		Expect(seriesValue(families, "infrastate_statehistory_newest_kept_timestamp_seconds", object("refused"))).To(BeNil(),
			"a history that never kept its state serves no kept time")
		Expect(seriesValue(families, "infrastate_backend_lock_stale_after_seconds", object("gone"))).To(BeNil(),
			"a backend whose lock is not checked has no stale threshold")

		By("finding, for each alert of the chart, its metrics in the scrape with every label its expression names")
		rules := chartAlerts(ctx)
		Expect(rules).To(HaveLen(5))
		for alert, expr := range rules {
			uses := promQLUses(expr)
			Expect(uses).NotTo(BeEmpty(), "%s reads no metric: %s", alert, expr)
			for metric, labels := range uses {
				family, ok := families[metric]
				Expect(ok).To(BeTrue(), "%s reads %s, which the manager does not serve", alert, metric)
				Expect(family.GetMetric()).NotTo(BeEmpty(), "%s reads %s, which has no series", alert, metric)
				for _, label := range labels {
					for _, m := range family.GetMetric() {
						Expect(labelNames(m)).To(ContainElement(label), "%s reads label %s of %s, which its series lack", alert, label, metric)
					}
				}
			}
			for _, selector := range promQLSelectors(expr) {
				Expect(slices.ContainsFunc(families[selector.Name].GetMetric(), selects(selector))).To(BeTrue(),
					"%s selects %s, which matches no series the manager serves", alert, selector)
			}
		}

		By("the reconcile errors alert covers every controller the manager runs")
		controllers := families["controller_runtime_reconcile_total"].GetMetric()
		Expect(controllers).NotTo(BeEmpty())
		for _, selector := range promQLSelectors(rules["InfrastateReconcileErrors"]) {
			for _, m := range controllers {
				errors := &dto.Metric{Label: slices.DeleteFunc(slices.Clone(m.GetLabel()), func(l *dto.LabelPair) bool { return l.GetName() == "result" })}
				Expect(selects(selector)(errors)).To(BeTrue(), "%s leaves out the controller of %v", selector, labelValues(m))
			}
		}
	})

	It("are checked by a PromQL walk that sees selectors, by and on clauses", func() {
		uses := promQLUses(`sum by (kind) (a{x="1"}) > on(name) b * 2 or c`)
		Expect(uses).To(Equal(map[string][]string{"a": {"kind", "name", "x"}, "b": {"name"}, "c": {}}))
	})
})

// freeLoopbackAddress returns 127.0.0.1:port for a port that was free a
// moment ago: the manager's metrics endpoint, or an address nothing
// answers on.
func freeLoopbackAddress(ctx context.Context) string {
	l, err := new(net.ListenConfig).Listen(ctx, "tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}

// serviceAccountToken returns a token of the ServiceAccount
// namespace/name, from the kubeconfig serviceAccountKubeconfig writes to
// path.
func serviceAccountToken(ctx context.Context, namespace, name, path string) string {
	config, err := clientcmd.LoadFromFile(serviceAccountKubeconfig(ctx, namespace, name, path))
	Expect(err).NotTo(HaveOccurred())
	auth, ok := config.AuthInfos[name]
	Expect(ok).To(BeTrue(), "the kubeconfig of %s has no user %s", path, name)
	return auth.Token
}

// forgedToken is token with one character of its signature changed (the
// tenth from the end: the last ones may be padding bits a decoder
// ignores): a token of the same issuer and subject that the API server
// does not authenticate.
func forgedToken(token string) string {
	i := len(token) - 10
	swapped := byte('A')
	if token[i] == 'A' {
		swapped = 'B'
	}
	return token[:i] + string(swapped) + token[i+1:]
}

// getMetrics sends GET /metrics to the manager's endpoint at address,
// with token as a bearer token unless it is empty. The manager serves
// metrics with a certificate it makes at start, which no one signed.
func getMetrics(ctx context.Context, address, token string) (*http.Response, error) {
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12},
	}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+address+"/metrics", http.NoBody)
	Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return hc.Do(req)
}

// scrapeStatus is the status of a scrape with token.
func scrapeStatus(ctx context.Context, address, token string) int {
	resp, err := getMetrics(ctx, address, token)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	return resp.StatusCode
}

// scrape reads the metrics with token and parses the text exposition
// format.
func scrape(ctx context.Context, g Gomega, address, token string) map[string]*dto.MetricFamily {
	resp, err := getMetrics(ctx, address, token)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	text := expfmt.NewTextParser(model.UTF8Validation)
	families, err := text.TextToMetricFamilies(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return families
}

// seriesValue returns the value of the series of name whose labels
// include want, or nil when there is none.
func seriesValue(families map[string]*dto.MetricFamily, name string, want map[string]string) *float64 {
	for _, m := range families[name].GetMetric() {
		labels := labelValues(m)
		matches := true
		for k, v := range want {
			matches = matches && labels[k] == v
		}
		if !matches {
			continue
		}
		var v float64
		switch {
		case m.GetGauge() != nil:
			v = m.GetGauge().GetValue()
		case m.GetCounter() != nil:
			v = m.GetCounter().GetValue()
		case m.GetUntyped() != nil:
			v = m.GetUntyped().GetValue()
		}
		return &v
	}
	return nil
}

// selects returns whether a series matches the label matchers of
// selector, other than its metric name.
func selects(selector *parser.VectorSelector) func(*dto.Metric) bool {
	return func(m *dto.Metric) bool {
		values := labelValues(m)
		for _, matcher := range selector.LabelMatchers {
			if matcher.Name != model.MetricNameLabel && !matcher.Matches(values[matcher.Name]) {
				return false
			}
		}
		return true
	}
}

// labelValues are the labels of a series, by name.
func labelValues(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// promQLSelectors returns the vector selectors of a PromQL expression.
func promQLSelectors(expr string) []*parser.VectorSelector {
	parsed, err := parser.ParseExpr(expr)
	Expect(err).NotTo(HaveOccurred(), "PromQL %q", expr)
	return selectorsOf(parsed)
}

// selectorsOf returns the vector selectors of a parsed PromQL expression,
// in the order parser.Inspect walks it.
func selectorsOf(expr parser.Node) []*parser.VectorSelector {
	var out []*parser.VectorSelector
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

// labelNames are the label names of a series.
func labelNames(m *dto.Metric) []string {
	out := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out = append(out, l.GetName())
	}
	return out
}

// chartAlerts renders the chart's PrometheusRule with helm template and
// returns its alerts' expressions by alert name.
func chartAlerts(ctx context.Context) map[string]string {
	alerts := map[string]string{}
	for _, obj := range helmTemplate(ctx, "r", "ops", "metrics.prometheusRule.enabled=true") {
		if obj.GetKind() != "PrometheusRule" {
			continue
		}
		groups, _, err := unstructured.NestedSlice(obj.Object, "spec", "groups")
		Expect(err).NotTo(HaveOccurred())
		for _, group := range groups {
			rules, _, err := unstructured.NestedSlice(group.(map[string]any), "rules")
			Expect(err).NotTo(HaveOccurred())
			for _, rule := range rules {
				r := rule.(map[string]any)
				alert, expr := r["alert"].(string), r["expr"].(string)
				Expect(alerts).NotTo(HaveKey(alert))
				alerts[alert] = expr
			}
		}
	}
	return alerts
}

// promQLUses parses a PromQL expression and returns the metrics it reads,
// each with the labels the expression needs of it: those its selectors
// match on, and those of every by and on clause above it.
func promQLUses(expr string) map[string][]string {
	parsed, err := parser.ParseExpr(expr)
	Expect(err).NotTo(HaveOccurred(), "PromQL %q", expr)
	uses := map[string][]string{}
	need := func(metric string, labels ...string) {
		if _, ok := uses[metric]; !ok {
			uses[metric] = []string{}
		}
		for _, l := range labels {
			if l != model.MetricNameLabel && !slices.Contains(uses[metric], l) {
				uses[metric] = append(uses[metric], l)
			}
		}
	}
	parser.Inspect(parsed, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			Expect(n.Name).NotTo(BeEmpty(), "a selector without a metric name in %q", expr)
			need(n.Name)
			for _, m := range n.LabelMatchers {
				need(n.Name, m.Name)
			}
		case *parser.AggregateExpr:
			if !n.Without {
				for _, metric := range metricsUnder(n.Expr) {
					need(metric, n.Grouping...)
				}
			}
		case *parser.BinaryExpr:
			if n.VectorMatching != nil && n.VectorMatching.On {
				for _, metric := range append(metricsUnder(n.LHS), metricsUnder(n.RHS)...) {
					need(metric, n.VectorMatching.MatchingLabels...)
				}
			}
		}
		return nil
	})
	for _, labels := range uses {
		slices.Sort(labels)
	}
	return uses
}

// metricsUnder returns the metric names an expression selects.
func metricsUnder(expr parser.Node) []string {
	var out []string
	for _, vs := range selectorsOf(expr) {
		out = append(out, vs.Name)
	}
	return out
}

// historiesOf is the manifest of a StateHistory of backend, the
// HttpBackend of that name, for each name of buckets, each writing to its
// bucket through a CosBackend of its own, with the COS double's
// credentials.
func historiesOf(backend string, buckets map[string]string) string {
	var b strings.Builder
	b.WriteString(`apiVersion: v1
kind: Secret
metadata:
  name: history-cos
stringData:
  secretId: AKIDMETRICS
  secretKey: metrics-secret-key
`)
	for _, name := range slices.Sorted(maps.Keys(buckets)) {
		fmt.Fprintf(&b, `---
apiVersion: backends.infrastate.io/v1alpha1
kind: CosBackend
metadata:
  name: %[1]s-bucket
spec:
  bucket: %[2]s
  region: ap-guangzhou
  credentialsSecretRef:
    name: history-cos
---
apiVersion: backends.infrastate.io/v1alpha1
kind: StateHistory
metadata:
  name: %[1]s
spec:
  backendRef:
    kind: HttpBackend
    name: %[3]s
  destination:
    cosBackendRef:
      name: %[1]s-bucket
  interval: 10s
`, name, buckets[name], backend)
	}
	return b.String()
}
