package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// apiServerMetrics is an excerpt of a kube-apiserver's /metrics.
const apiServerMetrics = `# HELP apiserver_request_duration_seconds [STABLE] Response latency distribution.
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="secrets",scope="resource",subresource="",verb="GET",version="v1",le="0.005"} 12
# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="secrets",scope="resource",subresource="",verb="GET",version="v1"} 3000
apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="secrets",scope="resource",subresource="",verb="GET",version="v1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 1000
apiserver_request_total{code="409",component="apiserver",dry_run="",group="backends.infrastate.io",resource="httpbackends",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 20
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 7
# HELP apiserver_request_total_other Not the family.
# TYPE apiserver_request_total_other counter
apiserver_request_total_other 9
`

func TestRequestCountsFrom(t *testing.T) {
	families, err := parseFamilies(strings.NewReader(apiServerMetrics), apiRequestsMetric)
	if err != nil {
		t.Fatal(err)
	}
	want := requestCounts{
		{Verb: "GET", Resource: "secrets", Code: "200"}:                               3000,
		{Verb: "GET", Resource: "secrets", Code: "404"}:                               2,
		{Verb: "POST", Resource: "configmaps", Code: "201"}:                           1000,
		{Verb: "PATCH", Resource: "httpbackends", Subresource: "status", Code: "409"}: 20,
	}
	if diff := cmp.Diff(want, requestCountsFrom(families)); diff != "" {
		t.Errorf("requestCountsFrom mismatch (-want +got):\n%s", diff)
	}
	if len(families) != 1 {
		t.Errorf("parsed %d families, want only %s", len(families), apiRequestsMetric)
	}
}

func TestParseFamiliesRejectsGarbage(t *testing.T) {
	_, err := parseFamilies(strings.NewReader("apiserver_request_total{code=\"200\" 3\n"), apiRequestsMetric)
	if err == nil {
		t.Fatal("parseFamilies accepted a sample with unterminated labels")
	}
}

func TestReconcileProgressFrom(t *testing.T) {
	const managerMetrics = `# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="httpbackend",result="success"} 1200
controller_runtime_reconcile_total{controller="httpbackend",result="requeue_after"} 30
controller_runtime_reconcile_total{controller="httpbackend",result="error"} 4
controller_runtime_reconcile_total{controller="remotestate",result="success"} 99
# TYPE workqueue_depth gauge
workqueue_depth{controller="httpbackend",name="httpbackend",priority=""} 5
workqueue_depth{controller="httpbackend",name="httpbackend",priority="-100"} 2
workqueue_depth{controller="remotestate",name="remotestate",priority=""} 8
# TYPE workqueue_adds_total counter
workqueue_adds_total{controller="httpbackend",name="httpbackend"} 5000
`
	families, err := parseFamilies(strings.NewReader(managerMetrics), reconcileMetric, queueDepthMetric)
	if err != nil {
		t.Fatal(err)
	}
	got := reconcileProgressFrom(families, "httpbackend")
	if diff := cmp.Diff(reconcileProgress{reconciles: 1234, depth: 7}, got, cmp.AllowUnexported(reconcileProgress{})); diff != "" {
		t.Errorf("reconcileProgressFrom mismatch (-want +got):\n%s", diff)
	}
}

func TestKeepLine(t *testing.T) {
	names := []string{"workqueue_depth"}
	cases := map[string]bool{
		`workqueue_depth{name="a"} 1`:           true,
		`workqueue_depth 1`:                     true,
		`# HELP workqueue_depth Current depth.`: true,
		`# TYPE workqueue_depth gauge`:          true,
		`workqueue_depth_total{name="a"} 1`:     false,
		`# TYPE workqueue_depth_total counter`:  false,
		`other_metric 1`:                        false,
		`workqueue_depth_bucket{le="1"} 1`:      true,
		`workqueue_depth_sum 3`:                 true,
		`workqueue_depth_count{name="a"} 2`:     true,
		`# TYPE workqueue_depth_count counter`:  false,
		`workqueue_depth_countx 2`:              false,
		``:                                      false,
	}
	for line, want := range cases {
		if got := keepLine(line, names); got != want {
			t.Errorf("keepLine(%q) = %v, want %v", line, got, want)
		}
	}
}
