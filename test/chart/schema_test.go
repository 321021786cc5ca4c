package chart

import (
	"strings"
	"testing"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// TestLint checks that helm lint --strict passes with the default values
// and with the namespaced ones.
func TestLint(t *testing.T) {
	cases := map[string][]string{
		"defaults":           nil,
		"watched namespaces": {"watchNamespaces={team-a,team-b}"},
		"ServiceMonitor":     {"metrics.serviceMonitor.enabled=true"},
		"shards":             {"shards={a,b}", "metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true"},
		"PrometheusRule":     {"metrics.prometheusRule.enabled=true"},
		"PrometheusRule over a ServiceMonitor without honorLabels": {
			"metrics.prometheusRule.enabled=true", "metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.honorLabels=false",
		},
	}
	for name, set := range cases {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"lint", "--strict", chartDir, "--namespace", releaseNamespace}, testtools.HelmSetArgs(set...)...)
			stdout, stderr, err := testtools.RunHelm(t.Context(), t, args...)
			if err != nil {
				t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout, stderr)
			}
		})
	}
}

// TestSchemaRejects checks that values.schema.json refuses wrong values at
// helm template (and so at helm install), naming what is wrong.
func TestSchemaRejects(t *testing.T) {
	cases := map[string]struct {
		set []string
		// want is part of helm's message.
		want string
	}{
		"a replica count that is not a number":     {set: []string{"replicaCount=two"}, want: "at '/replicaCount': got string, want integer"},
		"an unknown top-level key":                 {set: []string{"replicas=2"}, want: "additional properties 'replicas' not allowed"},
		"an unknown nested key":                    {set: []string{"image.name=x"}, want: "additional properties 'name' not allowed"},
		"an unknown key in a list item":            {set: []string{"tolerations[0].keyy=x"}, want: "additional properties 'keyy' not allowed"},
		"a digest that is not sha256":              {set: []string{"image.digest=latest"}, want: "at '/image/digest'"},
		"an invalid namespace":                     {set: []string{"watchNamespaces={Team_A}"}, want: "at '/watchNamespaces/0'"},
		"a Lease name that is no name":             {set: []string{"leaderElectionID=Team_A"}, want: "at '/leaderElectionID'"},
		"a shard name that is no DNS label":        {set: []string{"shards={Shard_A}"}, want: "at '/shards/0'"},
		"a shard name longer than a label value":   {set: []string{"shards={" + strings.Repeat("a", 64) + "}"}, want: "at '/shards/0': maxLength"},
		"a shard named twice":                      {set: []string{"shards={a,b,a}"}, want: "at '/shards': items at 0 and 2 are equal"},
		"an unknown reference policy":              {set: []string{"secretReferencePolicy=any"}, want: "at '/secretReferencePolicy'"},
		"a probe interval that is no duration":     {set: []string{"defaultProbeInterval=often"}, want: "at '/defaultProbeInterval'"},
		"an extra argument that is no flag":        {set: []string{"extraArgs={verbose}"}, want: "at '/extraArgs/0'"},
		"a budget that is no quantity":             {set: []string{"budgets.apiStorageTotal=lots"}, want: "at '/budgets/apiStorageTotal'"},
		"a budget in decimal units":                {set: []string{"budgets.readMemoryTotal=96M"}, want: "at '/budgets/readMemoryTotal'"},
		"a CPU budget that is no duration":         {set: []string{"budgets.keyDerivationCPUTotal=15"}, want: "at '/budgets/keyDerivationCPUTotal'"},
		"an unknown budget":                        {set: []string{"budgets.probeTime=1m"}, want: "additional properties 'probeTime' not allowed"},
		"a spool size that is no quantity":         {set: []string{"spoolSizeLimit=lots"}, want: "at '/spoolSizeLimit'"},
		"a spool size with a unit of its own":      {set: []string{"spoolSizeLimit=2GB"}, want: "at '/spoolSizeLimit'"},
		"a spool size of 0, no bound":              {set: []string{"spoolSizeLimit=0"}, want: "at '/spoolSizeLimit'"},
		"no spool size":                            {set: []string{"spoolSizeLimit=null"}, want: "missing property 'spoolSizeLimit'"},
		"a port out of range":                      {set: []string{"metrics.service.port=70000"}, want: "at '/metrics/service/port'"},
		"an unknown alert":                         {set: []string{"metrics.prometheusRule.lockHeld.for=5m"}, want: "additional properties 'lockHeld' not allowed"},
		"a for that is no Prometheus duration":     {set: []string{"metrics.prometheusRule.backendUnreachable.for=15 minutes"}, want: "at '/metrics/prometheusRule/backendUnreachable/for'"},
		"a for with its units out of order":        {set: []string{"metrics.prometheusRule.staleLock.for=30m1h"}, want: "at '/metrics/prometheusRule/staleLock/for'"},
		"a for with Go's fractions":                {set: []string{"metrics.prometheusRule.reconcileErrors.for=1.5h"}, want: "at '/metrics/prometheusRule/reconcileErrors/for'"},
		"an empty severity":                        {set: []string{"metrics.prometheusRule.staleLock.severity="}, want: "at '/metrics/prometheusRule/staleLock/severity'"},
		"a factor below 1":                         {set: []string{"metrics.prometheusRule.remoteStateNotRefreshed.intervalFactor=0"}, want: "at '/metrics/prometheusRule/remoteStateNotRefreshed/intervalFactor'"},
		"a negative floor":                         {set: []string{"metrics.prometheusRule.remoteStateNotRefreshed.minimumAgeSeconds=-1"}, want: "at '/metrics/prometheusRule/remoteStateNotRefreshed/minimumAgeSeconds'"},
		"a maximum age below 300":                  {set: []string{"metrics.prometheusRule.stateHistoryBehind.maxAgeSeconds=60"}, want: "at '/metrics/prometheusRule/stateHistoryBehind/maxAgeSeconds'"},
		"a maximum age that is a duration":         {set: []string{"metrics.prometheusRule.stateHistoryBehind.maxAgeSeconds=2h"}, want: "at '/metrics/prometheusRule/stateHistoryBehind/maxAgeSeconds'"},
		"a maximum age with a fraction":            {set: []string{"metrics.prometheusRule.stateHistoryBehind.maxAgeSeconds=7200.5"}, want: "at '/metrics/prometheusRule/stateHistoryBehind/maxAgeSeconds'"},
		"the state history alert's values as null": {set: []string{"metrics.prometheusRule.stateHistoryBehind=null"}, want: "missing property 'stateHistoryBehind'"},
		"a severity among the alert labels":        {set: []string{"metrics.prometheusRule.alertLabels.severity=critical"}, want: "invalid propertyName 'severity'"},
		"a runbook URL that is no URL":             {set: []string{"metrics.prometheusRule.runbookURL=docs/monitoring.md"}, want: "at '/metrics/prometheusRule/runbookURL'"},
		"no runbook URL":                           {set: []string{"metrics.prometheusRule.runbookURL=null"}, want: "missing property 'runbookURL'"},
		"an alert's values set to null":            {set: []string{"metrics.prometheusRule.staleLock=null"}, want: "missing property 'staleLock'"},
		"no ServiceMonitor values":                 {set: []string{"metrics.serviceMonitor=null"}, want: "missing property 'serviceMonitor'"},
		"no honorLabels":                           {set: []string{"metrics.serviceMonitor.honorLabels=null"}, want: "missing property 'honorLabels'"},
		"an alert label that is no label name":     {set: []string{"metrics.prometheusRule.alertLabels.team-name=x"}, want: "invalid propertyName 'team-name'"},
		"a reserved alert label":                   {set: []string{"metrics.prometheusRule.alertLabels.__tenant=x"}, want: "invalid propertyName '__tenant'"},
		"the alert name among the alert labels":    {set: []string{"metrics.prometheusRule.alertLabels.alertname=x"}, want: "invalid propertyName 'alertname'"},
		"an object's label among the alert labels": {set: []string{"metrics.prometheusRule.alertLabels.namespace=x"}, want: "invalid propertyName 'namespace'"},
		"the controller among the alert labels":    {set: []string{"metrics.prometheusRule.alertLabels.controller=x"}, want: "invalid propertyName 'controller'"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, stderr, err := testtools.RunHelm(t.Context(), t, templateArgs(tc.set...)...)
			if err == nil {
				t.Fatalf("helm template --set %v succeeded, want the schema to refuse it", tc.set)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("helm template --set %v failed with\n%s\nwant a message containing %q", tc.set, stderr, tc.want)
			}
		})
	}
}

// TestSchemaAccepts checks that values the schema must not refuse render.
// extraArgs_test.go checks which extraArgs render.
func TestSchemaAccepts(t *testing.T) {
	cases := map[string][]string{
		"a digest":                      {"image.digest=sha256:" + strings.Repeat("ab", 32)},
		"no resources":                  {"resources=null"},
		"a toleration":                  {"tolerations[0].key=dedicated", "tolerations[0].operator=Exists", "tolerations[0].effect=NoSchedule"},
		"an allow list of addresses":    {"allowedAddressCIDRs={10.0.0.0/8,2001:db8::/32}"},
		"the labeled reference policy":  {"secretReferencePolicy=labeled"},
		"a spool size in decimal units": {"spoolSizeLimit=500M"},
		"shards":                        {"shards={a,shard-2,63" + strings.Repeat("x", 61) + "}"},
	}
	for name, set := range cases {
		t.Run(name, func(t *testing.T) {
			template(t, set...)
		})
	}
}
