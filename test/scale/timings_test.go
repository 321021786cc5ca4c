package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDurationsNote(t *testing.T) {
	const managerMetrics = `# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="httpbackend",le="+Inf"} 1000
controller_runtime_reconcile_time_seconds_sum{controller="httpbackend"} 42
controller_runtime_reconcile_time_seconds_count{controller="httpbackend"} 1000
controller_runtime_reconcile_time_seconds_bucket{controller="statelock",le="+Inf"} 10
controller_runtime_reconcile_time_seconds_sum{controller="statelock"} 900
controller_runtime_reconcile_time_seconds_count{controller="statelock"} 10
# TYPE infrastate_backend_probe_duration_seconds histogram
infrastate_backend_probe_duration_seconds_bucket{kind="HttpBackend",result="StateFound",le="+Inf"} 600
infrastate_backend_probe_duration_seconds_sum{kind="HttpBackend",result="StateFound"} 3
infrastate_backend_probe_duration_seconds_count{kind="HttpBackend",result="StateFound"} 600
infrastate_backend_probe_duration_seconds_bucket{kind="HttpBackend",result="StateNotFound",le="+Inf"} 400
infrastate_backend_probe_duration_seconds_sum{kind="HttpBackend",result="StateNotFound"} 1
infrastate_backend_probe_duration_seconds_count{kind="HttpBackend",result="StateNotFound"} 400
infrastate_backend_probe_duration_seconds_bucket{kind="CosBackend",result="BucketFound",le="+Inf"} 5
infrastate_backend_probe_duration_seconds_sum{kind="CosBackend",result="BucketFound"} 50
infrastate_backend_probe_duration_seconds_count{kind="CosBackend",result="BucketFound"} 5
`
	families, err := parseFamilies(strings.NewReader(managerMetrics), reconcileTimeMetric, probeDurationMetric)
	if err != nil {
		t.Fatal(err)
	}
	after := durationsFrom(families, httpBackendController, "HttpBackend")
	wantAfter := durations{reconcile: histogramTotal{sum: 42, count: 1000}, probe: histogramTotal{sum: 4, count: 1000}}
	if diff := cmp.Diff(wantAfter, after, cmp.AllowUnexported(durations{}, histogramTotal{})); diff != "" {
		t.Fatalf("durationsFrom mismatch (-want +got):\n%s", diff)
	}

	tests := []struct {
		name   string
		before durations
		want   string
	}{
		{
			name: "since the process started",
			want: "mean reconcile 42.0 ms (1000), mean probe 4.0 ms (1000)",
		},
		{
			name:   "since a scenario started",
			before: durations{reconcile: histogramTotal{sum: 40, count: 900}, probe: histogramTotal{sum: 3.5, count: 900}},
			want:   "mean reconcile 20.0 ms (100), mean probe 5.0 ms (100)",
		},
		{
			name:   "nothing since",
			before: after,
			want:   "mean reconcile 0.0 ms (0), mean probe 0.0 ms (0)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, durationsNote(tt.before, after)); diff != "" {
				t.Errorf("durationsNote mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWorkersStartedAt(t *testing.T) {
	tests := []struct {
		name   string
		log    string
		want   time.Time
		wantOK bool
	}{
		{
			name: "the HttpBackend workers' line",
			log: `{"level":"info","ts":"2026-12-06T01:13:04Z","logger":"setup","msg":"Starting manager"}
{"level":"info","ts":"2026-12-06T01:13:05Z","msg":"Starting workers","controller":"statelock","worker count":4}
{"level":"info","ts":"2026-12-06T01:13:09Z","msg":"Starting workers","controller":"httpbackend","worker count":4}
`,
			want:   time.Date(2026, 12, 6, 1, 13, 9, 0, time.UTC),
			wantOK: true,
		},
		{
			name: "not yet",
			log:  `{"level":"info","ts":"2026-12-06T01:13:05Z","msg":"Starting workers","controller":"statelock","worker count":4}`,
		},
		{
			name: "a line that is not JSON",
			log:  `"Starting workers" "controller":"httpbackend" at some point`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := workersStartedAt([]byte(tt.log))
			if ok != tt.wantOK || !got.Equal(tt.want) {
				t.Errorf("workersStartedAt = %v, %t; want %v, %t", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
