package main

import (
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseOptions(t *testing.T) {
	defaults := options{
		n: 1000, perNamespace: 100, workers: 8, concurrency: 4, probeInterval: 30 * time.Second,
		scenarios: allScenarios, unrelatedSecrets: 50000, unrelatedConfigMaps: 10000, killN: 1000,
		latencySamples: 50, shardRelabel: 1000, settle: 10 * time.Second, pprofSeconds: 30,
	}
	cases := map[string]struct {
		args    []string
		want    options
		wantErr bool
	}{
		"defaults": {want: defaults},
		"small run": {
			args: []string{"-n", "200", "-unrelated-secrets", "2000", "-unrelated-configmaps", "500", "-kill-n", "200",
				"-latency-samples", "10", "-probe-interval", "10s", "-shard-relabel", "50"},
			want: func() options {
				o := defaults
				o.n, o.unrelatedSecrets, o.unrelatedConfigMaps, o.killN, o.latencySamples = 200, 2000, 500, 200, 10
				o.shardRelabel = 50
				o.probeInterval = 10 * time.Second
				return o
			}(),
		},
		"scenarios run in their own order": {
			args: []string{"-scenarios", "burst, floor-burst,burst"},
			want: func() options {
				o := defaults
				o.scenarios = []string{scenarioFloorBurst, scenarioBurst}
				return o
			}(),
		},
		"unknown scenario":         {args: []string{"-scenarios", "burst,warp"}, wantErr: true},
		"no scenario":              {args: []string{"-scenarios", " , "}, wantErr: true},
		"probe interval too short": {args: []string{"-probe-interval", "5s"}, wantErr: true},
		"no backends":              {args: []string{"-n", "0"}, wantErr: true},
		"no relabel":               {args: []string{"-shard-relabel", "0"}, wantErr: true},
		"negative unrelated":       {args: []string{"-unrelated-secrets", "-1"}, wantErr: true},
		"stray argument":           {args: []string{"extra"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseOptions(tc.args, io.Discard)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseOptions error = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(options{})); diff != "" {
				t.Errorf("parseOptions mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWaitTimeout(t *testing.T) {
	cases := map[string]struct {
		o        options
		backends int
		want     time.Duration
	}{
		"derived":  {backends: 1000, want: 2*time.Minute + 100*time.Second},
		"explicit": {o: options{timeout: time.Minute}, backends: 1000, want: time.Minute},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.o.waitTimeout(tc.backends); got != tc.want {
				t.Errorf("waitTimeout(%d) = %v, want %v", tc.backends, got, tc.want)
			}
		})
	}
}
