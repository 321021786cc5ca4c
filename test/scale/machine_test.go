package main

import "testing"

func TestParseCPUModel(t *testing.T) {
	cases := map[string]struct{ text, want string }{
		"x86": {
			text: "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\nprocessor\t: 1\nmodel name\t: Other\n",
			want: "Intel(R) Xeon(R) CPU @ 2.20GHz",
		},
		"none (arm64 writes no model name)": {text: "processor\t: 0\nBogoMIPS\t: 50.00\n", want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := parseCPUModel(tc.text); got != tc.want {
				t.Errorf("parseCPUModel = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseMemTotal(t *testing.T) {
	cases := map[string]struct {
		text string
		want int64
	}{
		"present": {text: "MemTotal:        8048576 kB\nMemFree:  100 kB\n", want: 8048576 * 1024},
		"absent":  {text: "MemFree:  100 kB\n", want: 0},
		"garbage": {text: "MemTotal: lots\n", want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := parseMemTotal(tc.text); got != tc.want {
				t.Errorf("parseMemTotal = %d, want %d", got, tc.want)
			}
		})
	}
}
