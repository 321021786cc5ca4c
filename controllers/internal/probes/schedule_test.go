package probes

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestProbeSchedulePullIn(t *testing.T) {
	key := types.NamespacedName{Namespace: "team-a", Name: "web"}
	probed := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		interval time.Duration
		inputs   string
		// by is when the next probe must run, counted from the last probe;
		// now is when pullIn is called.
		by, now  time.Duration
		wantOK   bool
		wantWait time.Duration
		// wantDue is whether a probe is due at the time by.
		wantDue bool
	}{
		"earlier than the interval": {interval: time.Hour, inputs: "a", by: 5 * time.Minute, now: time.Minute,
			wantOK: true, wantWait: 4 * time.Minute, wantDue: true},
		"later than the interval keeps the interval": {interval: time.Minute, inputs: "a", by: 5 * time.Minute, now: 0,
			wantOK: true, wantDue: true},
		"with periodic probing off":   {inputs: "a", by: 5 * time.Minute, now: 0, wantOK: true, wantWait: 5 * time.Minute, wantDue: true},
		"past, and a probe ran since": {interval: time.Hour, inputs: "a", by: -time.Second, now: time.Minute},
		"other inputs":                {interval: time.Hour, inputs: "b", by: 5 * time.Minute, now: time.Minute, wantDue: true},
		"due already":                 {interval: time.Hour, inputs: "a", by: time.Minute, now: 2 * time.Minute, wantOK: true, wantWait: time.Millisecond, wantDue: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewSchedule()
			s.last[key] = probeRecord{at: probed, inputs: "a", next: tc.interval}
			wait, ok := s.PullIn(key, tc.inputs, probed.Add(tc.by), probed.Add(tc.now))
			if ok != tc.wantOK || (tc.wantWait > 0 && wait != tc.wantWait) {
				t.Errorf("pullIn = %s, %v, want %s, %v", wait, ok, tc.wantWait, tc.wantOK)
			}
			if due, _ := s.Due(key, tc.inputs, probed.Add(max(tc.by, 0))); due != tc.wantDue && tc.by > 0 {
				t.Errorf("due at the time asked = %v, want %v", due, tc.wantDue)
			}
		})
	}
}

func TestExpireMakesAProbeDueAtOnce(t *testing.T) {
	key := types.NamespacedName{Namespace: "team-a", Name: "web"}
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	s := NewSchedule()
	s.Probed(key, "a", now, time.Hour)
	if due, _ := s.Due(key, "a", now.Add(time.Minute)); due {
		t.Fatal("a probe of the same inputs is due a minute after the last one")
	}
	s.Expire(key)
	s.Seed(key, "a", now, time.Hour) // as after a status that holds a probe of the generation
	if due, wait := s.Due(key, "a", now.Add(time.Minute)); !due {
		t.Errorf("after Expire, a probe of the same inputs waits %s, want it due at once", wait)
	}
}
