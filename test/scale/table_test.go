package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestResultCells(t *testing.T) {
	cases := map[string]struct {
		result result
		want   []string
	}{
		"a floor row": {
			result: result{
				scenario: scenarioFloorBurst, backends: 1000, elapsed: 20 * time.Second, probes: -1,
				requests: requestCounts{{Verb: "POST", Resource: "configmaps", Code: "201"}: 1000},
			},
			want: []string{"floor-burst", "1000", "20.0s", "50.0", "-", "POST configmaps 1000", "-", "-", "-", "-", "-"},
		},
		"a manager row against the floor": {
			result: result{
				scenario: scenarioBurst, backends: 1000, elapsed: 50 * time.Second, floor: 20 * time.Second,
				requests: requestCounts{}, probes: 1500, allProbes: 1500,
				usage: &managerUsage{peak: 100 << 20, rss: 80 << 20, cpu: 12500 * time.Millisecond},
				notes: []string{"a", "b"},
			},
			want: []string{"burst", "1000", "50.0s", "20.0", "2.50x", "none", "1500 (1.50)", "100.0", "80.0", "12.50", "a; b"},
		},
		"a short time and a time text": {
			result: result{
				scenario: scenarioApplyLatency, backends: 10, elapsed: 1500 * time.Millisecond,
				timeText: "p50 80ms, p95 120ms", probes: 10, allProbes: 95,
			},
			want: []string{"apply-latency", "10", "p50 80ms, p95 120ms", "6.7", "-", "-", "10 (1.00), all 95", "-", "-", "-", "-"},
		},
		"untimed": {
			result: result{scenario: scenarioAtRest, backends: 1000, probes: 0},
			want:   []string{"at-rest", "1000", "-", "-", "-", "-", "0 (0.00)", "-", "-", "-", "-"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.result.cells()); diff != "" {
				t.Errorf("cells mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMarkdownTable(t *testing.T) {
	got := markdownTable([]string{"a", "b"}, [][]string{{"1", "x|y"}, {"2", "two\nlines"}})
	want := "| a | b |\n| --- | --- |\n| 1 | x\\|y |\n| 2 | two lines |\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("markdownTable mismatch (-want +got):\n%s", diff)
	}
}

func TestResultsTableHasOneRowPerResult(t *testing.T) {
	got := resultsTable([]result{{scenario: "x", probes: -1}, {scenario: "y", probes: -1}})
	want := "| scenario | backends | time | objects/s | vs floor | operator API requests | probes (per backend) | peak RSS MiB | RSS MiB | CPU s | notes |\n" +
		"| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n" +
		"| x | 0 | - | - | - | - | - | - | - | - | - |\n" +
		"| y | 0 | - | - | - | - | - | - | - | - | - |\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resultsTable mismatch (-want +got):\n%s", diff)
	}
}
