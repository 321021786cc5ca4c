package main

import "testing"

func TestPaceCollector(t *testing.T) {
	cases := map[string]struct {
		gogc string
		want bool
	}{
		"GOGC unset: the manager paces the collector": {gogc: "", want: true},
		"GOGC=100: the runtime's, as read":            {gogc: "100", want: false},
		"GOGC=off: the runtime's, as read":            {gogc: "off", want: false},
		"GOGC=50: the operator of the Pod's":          {gogc: "50", want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			getenv := func(key string) string {
				if key == "GOGC" {
					return tc.gogc
				}
				return ""
			}
			if got := paceCollector(getenv); got != tc.want {
				t.Errorf("paceCollector() = %v, want %v", got, tc.want)
			}
		})
	}
}
