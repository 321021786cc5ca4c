package chart

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	texttemplate "text/template"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// prometheusRule is the part of a PrometheusRule (monitoring.coreos.com/v1)
// the tests read; decode refuses any field it does not know.
type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Groups []struct {
			Name  string         `json:"name"`
			Rules []alertingRule `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// alertingRule is one rule of a PrometheusRule group.
type alertingRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// renderedRule renders the chart with set and returns its one
// PrometheusRule.
func renderedRule(t *testing.T, set ...string) prometheusRule {
	t.Helper()
	return decode[prometheusRule](t, find(t, template(t, set...), "PrometheusRule", releaseNamespace, prefix))
}

// alertsOf returns the alerting rules of rule by alert name, failing on a
// name that comes twice.
func alertsOf(t *testing.T, rule prometheusRule) map[string]alertingRule {
	t.Helper()
	out := map[string]alertingRule{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if _, dup := out[r.Alert]; dup {
				t.Errorf("alert %s is defined twice", r.Alert)
			}
			out[r.Alert] = r
		}
	}
	return out
}

// numbersOf returns the number literals of a PromQL expression.
func numbersOf(expr parser.Expr) []float64 {
	var out []float64
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if n, ok := node.(*parser.NumberLiteral); ok {
			out = append(out, n.Val)
		}
		return nil
	})
	return out
}

// windowsOf returns the number literals, the offsets and the ranges of a
// PromQL expression, in the order parser.Inspect walks it: "offset 2h",
// "range 2h", or the number.
func windowsOf(expr parser.Expr) []string {
	var out []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.NumberLiteral:
			out = append(out, strconv.FormatFloat(n.Val, 'f', -1, 64))
		case *parser.MatrixSelector:
			out = append(out, "range "+model.Duration(n.Range).String())
		case *parser.VectorSelector:
			if n.OriginalOffset != 0 {
				out = append(out, "offset "+model.Duration(n.OriginalOffset).String())
			}
		}
		return nil
	})
	return out
}

// The alerts of the chart, by name.
const (
	backendUnreachable      = "InfrastateBackendUnreachable"
	stateLockStale          = "InfrastateStateLockStale"
	remoteStateNotRefreshed = "InfrastateRemoteStateNotRefreshed"
	reconcileErrors         = "InfrastateReconcileErrors"
	stateHistoryBehind      = "InfrastateStateHistoryBehind"
)

// TestPrometheusRule checks the rule the chart renders when asked: every
// alert present once with the for and severity of the values, the alert
// labels on each, an expression Prometheus' own parser accepts (with the
// factor and the floor, and the maximum age, of the values in it), and
// annotations that are valid Prometheus templates naming the object.
func TestPrometheusRule(t *testing.T) {
	type want struct {
		// forDuration and severity of each alert.
		forDuration, severity map[string]string
		alertLabels           map[string]string
		// numbers are the number literals of the RemoteState alert.
		numbers []float64
		// historyWindows are the number literals, offsets and ranges of
		// the state history alert.
		historyWindows []string
	}
	cases := map[string]struct {
		set  []string
		want want
	}{
		"defaults": {
			set: []string{"metrics.prometheusRule.enabled=true"},
			want: want{
				forDuration:    map[string]string{backendUnreachable: "15m", stateLockStale: "1m", remoteStateNotRefreshed: "5m", reconcileErrors: "15m", stateHistoryBehind: "10m"},
				severity:       map[string]string{backendUnreachable: "warning", stateLockStale: "warning", remoteStateNotRefreshed: "warning", reconcileErrors: "warning", stateHistoryBehind: "warning"},
				numbers:        []float64{3, 900},
				historyWindows: []string{"7200", "0", "offset 2h", "7200", "range 2h"},
			},
		},
		"every value set": {
			set: []string{
				"metrics.prometheusRule.enabled=true",
				"metrics.prometheusRule.labels.release=kube-prometheus",
				"metrics.prometheusRule.alertLabels.team=platform",
				"metrics.prometheusRule.backendUnreachable.for=1h",
				"metrics.prometheusRule.backendUnreachable.severity=critical",
				"metrics.prometheusRule.staleLock.for=0s",
				"metrics.prometheusRule.staleLock.severity=info",
				"metrics.prometheusRule.remoteStateNotRefreshed.for=10m",
				"metrics.prometheusRule.remoteStateNotRefreshed.severity=critical",
				"metrics.prometheusRule.remoteStateNotRefreshed.intervalFactor=2",
				"metrics.prometheusRule.remoteStateNotRefreshed.minimumAgeSeconds=3600",
				"metrics.prometheusRule.reconcileErrors.for=1h30m",
				"metrics.prometheusRule.reconcileErrors.severity=page",
				"metrics.prometheusRule.stateHistoryBehind.maxAgeSeconds=86400",
				"metrics.prometheusRule.stateHistoryBehind.for=30m",
				"metrics.prometheusRule.stateHistoryBehind.severity=critical",
			},
			want: want{
				forDuration:    map[string]string{backendUnreachable: "1h", stateLockStale: "0s", remoteStateNotRefreshed: "10m", reconcileErrors: "1h30m", stateHistoryBehind: "30m"},
				severity:       map[string]string{backendUnreachable: "critical", stateLockStale: "info", remoteStateNotRefreshed: "critical", reconcileErrors: "page", stateHistoryBehind: "critical"},
				alertLabels:    map[string]string{"team": "platform"},
				numbers:        []float64{2, 3600},
				historyWindows: []string{"86400", "0", "offset 1d", "86400", "range 1d"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rule := renderedRule(t, tc.set...)
			if rule.APIVersion != "monitoring.coreos.com/v1" {
				t.Errorf("apiVersion = %q, want monitoring.coreos.com/v1", rule.APIVersion)
			}
			alerts := alertsOf(t, rule)
			var names []string
			for n := range alerts {
				names = append(names, n)
			}
			slices.Sort(names)
			if diff := cmp.Diff([]string{backendUnreachable, reconcileErrors, remoteStateNotRefreshed, stateHistoryBehind, stateLockStale}, names); diff != "" {
				t.Fatalf("alerts (-want +got):\n%s", diff)
			}
			for name, a := range alerts {
				if a.For != tc.want.forDuration[name] {
					t.Errorf("%s: for = %q, want %q", name, a.For, tc.want.forDuration[name])
				}
				if _, err := model.ParseDuration(a.For); err != nil {
					t.Errorf("%s: for %q is no Prometheus duration: %v", name, a.For, err)
				}
				wantLabels := map[string]string{"severity": tc.want.severity[name]}
				maps.Copy(wantLabels, tc.want.alertLabels)
				if diff := cmp.Diff(wantLabels, a.Labels); diff != "" {
					t.Errorf("%s: labels (-want +got):\n%s", name, diff)
				}
				expr, err := parser.ParseExpr(a.Expr)
				if err != nil {
					t.Errorf("%s: expr does not parse: %v\n%s", name, err, a.Expr)
					continue
				}
				if name == remoteStateNotRefreshed {
					if diff := cmp.Diff(tc.want.numbers, numbersOf(expr)); diff != "" {
						t.Errorf("%s: the factor and the floor in %q (-want +got):\n%s", name, a.Expr, diff)
					}
				}
				if name == stateHistoryBehind {
					if diff := cmp.Diff(tc.want.historyWindows, windowsOf(expr)); diff != "" {
						t.Errorf("%s: the maximum age in %q (-want +got):\n%s", name, a.Expr, diff)
					}
				}
			}
			if got := rule.Metadata.Labels["release"]; (got != "") != slices.Contains(tc.set, "metrics.prometheusRule.labels.release=kube-prometheus") {
				t.Errorf("metadata.labels = %v: the values' labels are not applied", rule.Metadata.Labels)
			}
		})
	}
}

// TestPrometheusRuleAnnotations checks that each alert's annotations are
// Prometheus templates that, for an alert of HttpBackend team-a/web (or
// of the httpbackend controller), name the object and say where to look.
func TestPrometheusRuleAnnotations(t *testing.T) {
	alerts := alertsOf(t, renderedRule(t, "metrics.prometheusRule.enabled=true"))
	labels := map[string]string{"kind": "HttpBackend", "namespace": "team-a", "name": "web", "controller": "httpbackend"}
	objectWants := []string{"team-a/web", "-n team-a", "docs/troubleshooting.md"}
	cases := map[string]struct {
		// wants are parts of the summary and description together.
		wants []string
	}{
		backendUnreachable:      {wants: append([]string{"HttpBackend team-a/web", "kubectl describe httpbackend web -n team-a", "for 15m"}, objectWants...)},
		stateLockStale:          {wants: append([]string{"HttpBackend team-a/web", "kubectl describe httpbackend web", "2h0m0s", "forceUnlock"}, objectWants...)},
		remoteStateNotRefreshed: {wants: append([]string{"RemoteState team-a/web", "kubectl describe remotestate web -n team-a", "3 times", "at least 900s"}, objectWants...)},
		reconcileErrors:         {wants: []string{"httpbackend controller", "kubectl get httpbackend -A", "docs/troubleshooting.md", "for 15m"}},
		stateHistoryBehind: {wants: []string{
			"StateHistory team-a/web", "for 2h0m0s", "2h0m0s ago, more than 7200s", "kubectl describe statehistory web -n team-a",
			"SnapshotsReady", "DestinationUnreachable", "kubectl get shist -A", "docs/monitoring.md",
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, ok := alerts[name]
			if !ok {
				t.Fatalf("no alert %s", name)
			}
			var text strings.Builder
			for _, key := range []string{"summary", "description"} {
				text.WriteString(expandAnnotation(t, a.Annotations[key], labels, 7200) + "\n")
			}
			for _, want := range tc.wants {
				if !strings.Contains(text.String(), want) {
					t.Errorf("the annotations do not say %q:\n%s", want, text.String())
				}
			}
			if url := a.Annotations["runbook_url"]; url != "https://github.com/infrastate/backend-operator/blob/main/docs/monitoring.md#"+strings.ToLower(name) {
				t.Errorf("runbook_url = %q, want docs/monitoring.md at the alert's section", url)
			}
		})
	}
}

// expandAnnotation expands an annotation as Prometheus does (the same
// preamble defining $labels and $value; text/template with stand-ins of
// the functions the chart's annotations use: humanizeDuration prints Go's
// time.Duration), and fails on a template
// that does not parse or execute.
func expandAnnotation(t *testing.T, text string, labels map[string]string, value float64) string {
	t.Helper()
	if text == "" {
		t.Fatal("an empty annotation")
	}
	funcs := texttemplate.FuncMap{
		"toLower":          strings.ToLower,
		"humanize":         func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) },
		"humanizeDuration": func(v float64) string { return time.Duration(v * float64(time.Second)).String() },
	}
	const preamble = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	tmpl, err := texttemplate.New("annotation").Funcs(funcs).Option("missingkey=zero").Parse(preamble + text)
	if err != nil {
		t.Fatalf("annotation %q is no valid template: %v", text, err)
	}
	var out bytes.Buffer
	data := struct {
		Labels, ExternalLabels map[string]string
		ExternalURL            string
		Value                  float64
	}{Labels: labels, Value: value}
	if err := tmpl.Execute(&out, data); err != nil {
		t.Fatalf("expanding annotation %q: %v", text, err)
	}
	return out.String()
}

// TestRulesHaveOneSource checks that the chart's template is the only file
// of the repository that defines the alerts: docs name them, never copy
// them.
func TestRulesHaveOneSource(t *testing.T) {
	source := filepath.Join(chartDir, "templates", "prometheusrule.yaml")
	var sources []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == ".git" || d.Name() == "bin"):
			return filepath.SkipDir
		case d.IsDir() || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte("alert: Infrastate")) {
			sources = append(sources, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking the repository: %v", err)
	}
	if diff := cmp.Diff([]string{source}, sources); diff != "" {
		t.Errorf("files defining the alerts (-want +got):\n%s", diff)
	}
}

// TestServiceMonitorHonorsLabels checks that the ServiceMonitor keeps the
// namespace label of the scraped series unless told not to (the alerts
// read either: alerts_objects_test.go).
func TestServiceMonitorHonorsLabels(t *testing.T) {
	type serviceMonitor struct {
		Spec struct {
			Endpoints []struct {
				HonorLabels bool `json:"honorLabels"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	cases := map[string]struct {
		set  []string
		want bool
	}{
		"by default": {set: []string{"metrics.serviceMonitor.enabled=true"}, want: true},
		"turned off": {set: []string{"metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.honorLabels=false"}, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := find(t, template(t, tc.set...), "ServiceMonitor", releaseNamespace, prefix)
			var sm serviceMonitor
			if err := yaml.Unmarshal(d.raw, &sm); err != nil {
				t.Fatalf("decoding the ServiceMonitor: %v", err)
			}
			if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].HonorLabels != tc.want {
				t.Errorf("endpoints = %+v, want one with honorLabels %v", sm.Spec.Endpoints, tc.want)
			}
		})
	}
}

// TestServiceMonitorSelectsTheMetricsService checks that the
// ServiceMonitor selects the metrics Service by its labels, and scrapes a
// port the Service has, with one manager and with shards.
func TestServiceMonitorSelectsTheMetricsService(t *testing.T) {
	type labelled struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			Endpoints []struct {
				Port string `json:"port"`
			} `json:"endpoints"`
			Ports []struct {
				Name string `json:"name"`
			} `json:"ports"`
		} `json:"spec"`
	}
	decode := func(t *testing.T, raw []byte) labelled {
		t.Helper()
		var l labelled
		if err := yaml.Unmarshal(raw, &l); err != nil {
			t.Fatalf("decoding: %v", err)
		}
		return l
	}
	for name, set := range map[string][]string{
		"one manager": {"metrics.serviceMonitor.enabled=true"},
		"shards":      {"metrics.serviceMonitor.enabled=true", "shards={a,b}"},
	} {
		t.Run(name, func(t *testing.T) {
			docs := template(t, set...)
			sm := decode(t, find(t, docs, "ServiceMonitor", releaseNamespace, prefix).raw)
			svc := decode(t, find(t, docs, "Service", releaseNamespace, prefix+"-metrics").raw)
			if len(sm.Spec.Selector.MatchLabels) == 0 {
				t.Fatal("the ServiceMonitor selects every Service of its namespace")
			}
			for k, v := range sm.Spec.Selector.MatchLabels {
				if svc.Metadata.Labels[k] != v {
					t.Errorf("the ServiceMonitor selects %s=%s, the metrics Service has %s=%q", k, v, k, svc.Metadata.Labels[k])
				}
			}
			for _, e := range sm.Spec.Endpoints {
				found := false
				for _, p := range svc.Spec.Ports {
					found = found || p.Name == e.Port
				}
				if !found {
					t.Errorf("the ServiceMonitor scrapes port %q, which the metrics Service lacks", e.Port)
				}
			}
		})
	}
}
