package chart

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// renderedRulesAsParsed renders the chart with the PrometheusRule
// enabled and more helm flags (--set, --set-string), and returns its
// alerting rules by alert name as a YAML parser reads them, with no Go
// type to guide it (as the API server does): a scalar that YAML reads as
// a number or a boolean stays one.
func renderedRulesAsParsed(t *testing.T, flags ...string) map[string]map[string]any {
	t.Helper()
	stdout := render(t, append(templateArgs("metrics.prometheusRule.enabled=true"), flags...)...)
	d := find(t, splitDocuments(t, []byte(stdout)), "PrometheusRule", releaseNamespace, prefix)
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []map[string]any `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(d.raw, &rule); err != nil {
		t.Fatalf("parsing the PrometheusRule: %v", err)
	}
	out := map[string]map[string]any{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			name, _ := r["alert"].(string)
			out[name] = r
		}
	}
	return out
}

// TestPrometheusRuleKeepsStrings checks that values YAML would read as
// another type (0, on, 1, null) render as the strings they are in the
// PrometheusRule's for and labels, which its CRD wants as strings.
func TestPrometheusRuleKeepsStrings(t *testing.T) {
	cases := map[string]struct {
		flags      []string
		alert      string
		wantFor    any
		wantLabels map[string]any
	}{
		"a for of 0": {
			flags:      []string{"--set-string", "metrics.prometheusRule.staleLock.for=0"},
			alert:      stateLockStale,
			wantFor:    "0",
			wantLabels: map[string]any{"severity": "warning"},
		},
		"a severity of on": {
			flags:      []string{"--set", "metrics.prometheusRule.backendUnreachable.severity=on"},
			alert:      backendUnreachable,
			wantFor:    "15m",
			wantLabels: map[string]any{"severity": "on"},
		},
		"a severity of 1": {
			flags:      []string{"--set-string", "metrics.prometheusRule.remoteStateNotRefreshed.severity=1"},
			alert:      remoteStateNotRefreshed,
			wantFor:    "5m",
			wantLabels: map[string]any{"severity": "1"},
		},
		"a severity of null": {
			flags:      []string{"--set-string", "metrics.prometheusRule.reconcileErrors.severity=null"},
			alert:      reconcileErrors,
			wantFor:    "15m",
			wantLabels: map[string]any{"severity": "null"},
		},
		"a for of 0 and a severity of on, of the state history alert": {
			flags:      []string{"--set-string", "metrics.prometheusRule.stateHistoryBehind.for=0", "--set", "metrics.prometheusRule.stateHistoryBehind.severity=on"},
			alert:      stateHistoryBehind,
			wantFor:    "0",
			wantLabels: map[string]any{"severity": "on"},
		},
		"alert labels of 1 and on": {
			flags:      []string{"--set-string", "metrics.prometheusRule.alertLabels.tier=1", "--set", "metrics.prometheusRule.alertLabels.oncall=on"},
			alert:      backendUnreachable,
			wantFor:    "15m",
			wantLabels: map[string]any{"severity": "warning", "tier": "1", "oncall": "on"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rule := renderedRulesAsParsed(t, tc.flags...)[tc.alert]
			if diff := cmp.Diff(tc.wantFor, rule["for"]); diff != "" {
				t.Errorf("%s: for (-want +got):\n%s", tc.alert, diff)
			}
			if diff := cmp.Diff(tc.wantLabels, rule["labels"]); diff != "" {
				t.Errorf("%s: labels (-want +got):\n%s", tc.alert, diff)
			}
		})
	}
}
