package main

import "testing"

func TestGCPercent(t *testing.T) {
	cases := map[string]struct {
		gogc        string
		wantPercent int
		wantSet     bool
	}{
		"GOGC unset: the manager's default":   {gogc: "", wantPercent: defaultGCPercent, wantSet: true},
		"GOGC=100: the runtime's, as read":    {gogc: "100", wantSet: false},
		"GOGC=off: the runtime's, as read":    {gogc: "off", wantSet: false},
		"GOGC=200: the operator of the Pod's": {gogc: "200", wantSet: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			getenv := func(key string) string {
				if key == "GOGC" {
					return tc.gogc
				}
				return ""
			}
			percent, set := gcPercent(getenv)
			if percent != tc.wantPercent || set != tc.wantSet {
				t.Errorf("gcPercent() = %d, %v; want %d, %v", percent, set, tc.wantPercent, tc.wantSet)
			}
		})
	}
}
