package circuit

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// step is one thing that happens to the circuits: after a wait, a request
// is sent (send names its namespace and address), or the request of an
// earlier step ends (end is that step's index, with outcome).
type step struct {
	wait    time.Duration
	send    key
	end     int
	outcome Outcome
}

// Requests of the tests: two namespaces, two addresses.
var (
	aToHung  = key{"team-a", "http://10.0.0.1:80"}
	aToOther = key{"team-a", "http://10.0.0.2:80"}
	bToHung  = key{"team-b", "http://10.0.0.1:80"}
)

func send(k key) step                                 { return step{send: k, end: -1} }
func sendAfter(d time.Duration, k key) step           { return step{wait: d, send: k, end: -1} }
func end(i int, o Outcome) step                       { return step{end: i, outcome: o} }
func endAfter(d time.Duration, i int, o Outcome) step { return step{wait: d, end: i, outcome: o} }

// TestBreakers drives the circuits through sequences of requests and
// checks what each request was told: "sent", "trial", or "paused" with
// the times of its error, relative to the start.
func TestBreakers(t *testing.T) {
	cases := map[string]struct {
		steps []step
		want  []string // one per send, in order
	}{
		"answers keep the circuit closed": {
			steps: []step{send(aToHung), end(0, Answered), send(aToHung), end(2, Answered), send(aToHung)},
			want:  []string{"sent", "sent", "sent"},
		},
		"a timeout opens it, and requests fail at once during the cool-down": {
			steps: []step{send(aToHung), endAfter(30*time.Second, 0, Unanswered), send(aToHung), sendAfter(29*time.Second, aToHung)},
			want: []string{"sent",
				"paused since +30s until +60s, last sent +0s waited 30s",
				"paused since +30s until +60s, last sent +0s waited 30s"},
		},
		"one trial after the cool-down, the others still paused until it ends": {
			steps: []step{send(aToHung), endAfter(30*time.Second, 0, Unanswered), sendAfter(30*time.Second, aToHung), send(aToHung)},
			want: []string{"sent", "trial",
				"paused since +30s trial sent +60s, last sent +0s waited 30s"},
		},
		"an answer to the trial closes it": {
			steps: []step{send(aToHung), endAfter(30*time.Second, 0, Unanswered), sendAfter(30*time.Second, aToHung),
				endAfter(time.Second, 2, Answered), send(aToHung), send(aToHung)},
			want: []string{"sent", "trial", "sent", "sent"},
		},
		"a trial without an answer doubles the cool-down, up to five minutes": {
			steps: []step{
				send(aToHung), endAfter(30*time.Second, 0, Unanswered), // paused until +60s (30s)
				sendAfter(30*time.Second, aToHung), endAfter(30*time.Second, 2, Unanswered), // until +150s (60s)
				sendAfter(60*time.Second, aToHung), endAfter(30*time.Second, 4, Unanswered), // until +300s (120s)
				sendAfter(120*time.Second, aToHung), endAfter(30*time.Second, 6, Unanswered), // until +570s (240s)
				sendAfter(240*time.Second, aToHung), endAfter(30*time.Second, 8, Unanswered), // until +900s (300s, the bound)
				send(aToHung),
				sendAfter(300*time.Second, aToHung), endAfter(30*time.Second, 11, Unanswered), // +930s, 300s
				send(aToHung),
			},
			want: []string{"sent", "trial", "trial", "trial", "trial",
				"paused since +30s until +900s, last sent +570s waited 30s",
				"trial",
				"paused since +30s until +1230s, last sent +900s waited 30s"},
		},
		"an answer resets the cool-down": {
			steps: []step{send(aToHung), endAfter(30*time.Second, 0, Unanswered),
				sendAfter(30*time.Second, aToHung), endAfter(30*time.Second, 2, Unanswered), // 60s
				sendAfter(60*time.Second, aToHung), end(4, Answered),
				send(aToHung), endAfter(30*time.Second, 6, Unanswered), send(aToHung)},
			want: []string{"sent", "trial", "trial", "sent", "paused since +180s until +210s, last sent +150s waited 30s"},
		},
		"requests under way when it opened do not lengthen the pause": {
			steps: []step{send(aToHung), send(aToHung), send(aToHung),
				endAfter(30*time.Second, 0, Unanswered), endAfter(time.Second, 1, Unanswered), end(2, Unanswered),
				sendAfter(29*time.Second, aToHung)},
			want: []string{"sent", "sent", "sent", "trial"},
		},
		"a late answer to a request under way closes it": {
			steps: []step{send(aToHung), send(aToHung), endAfter(30*time.Second, 0, Unanswered), end(1, Answered), send(aToHung)},
			want:  []string{"sent", "sent", "sent"},
		},
		"an abandoned trial lets the next request be the trial": {
			steps: []step{send(aToHung), endAfter(30*time.Second, 0, Unanswered), sendAfter(30*time.Second, aToHung),
				end(2, Abandoned), send(aToHung)},
			want: []string{"sent", "trial", "trial"},
		},
		"an abandoned request does not open it": {
			steps: []step{send(aToHung), endAfter(30*time.Second, 0, Abandoned), send(aToHung)},
			want:  []string{"sent", "sent"},
		},
		"another namespace's requests to the same address go through": {
			steps: []step{send(aToHung), endAfter(30*time.Second, 0, Unanswered), send(bToHung), send(aToHung)},
			want:  []string{"sent", "sent", "paused since +30s until +60s, last sent +0s waited 30s"},
		},
		"the namespace's requests to another address go through": {
			steps: []step{send(aToHung), endAfter(30*time.Second, 0, Unanswered), send(aToOther)},
			want:  []string{"sent", "sent"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
			clk := clocktesting.NewFakePassiveClock(start)
			b := New(clk)
			rel := func(at time.Time) string { return fmt.Sprintf("+%ds", int(at.Sub(start).Seconds())) }
			tickets := map[int]*Ticket{}
			var got []string
			for i, s := range tc.steps {
				clk.SetTime(clk.Now().Add(s.wait))
				if s.end >= 0 {
					tickets[s.end].Done(s.outcome)
					continue
				}
				ticket, err := b.Allow(s.send.namespace, s.send.address)
				var open *OpenError
				switch {
				case err == nil && ticket.trial:
					got = append(got, "trial")
				case err == nil:
					got = append(got, "sent")
				case errors.As(err, &open):
					next := "until " + rel(open.Until)
					if !open.TrialSent.IsZero() {
						next = "trial sent " + rel(open.TrialSent)
					}
					got = append(got, fmt.Sprintf("paused since %s %s, last sent %s waited %s", rel(open.Since), next, rel(open.LastSent), open.Waited))
				default:
					t.Fatalf("step %d: Allow error %v, want an *OpenError", i, err)
				}
				tickets[i] = ticket
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("what the requests were told (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOpenErrorText shows the error as a condition message quotes it.
func TestOpenErrorText(t *testing.T) {
	at := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		err  *OpenError
		want string
	}{
		"cooling down": {
			err: &OpenError{Namespace: "team-a", Address: "https://state.example.com:443", Since: at.Add(30 * time.Second),
				Until: at.Add(60 * time.Second), LastSent: at, Waited: 30 * time.Second},
			want: "requests to https://state.example.com:443 from namespace team-a are paused since 2026-12-05T01:00:30Z " +
				"until 2026-12-05T01:01:00Z, when one trial request goes through: the last one, sent at 2026-12-05T01:00:00Z, " +
				"had no answer within 30s",
		},
		"a trial under way": {
			err: &OpenError{Namespace: "team-a", Address: "http://10.0.0.1:8080", Since: at.Add(30 * time.Second),
				Until: at.Add(60 * time.Second), TrialSent: at.Add(61 * time.Second), LastSent: at, Waited: 1500 * time.Millisecond},
			want: "requests to http://10.0.0.1:8080 from namespace team-a are paused since 2026-12-05T01:00:30Z " +
				"while a trial request, sent at 2026-12-05T01:01:01Z, awaits its answer: the last one, sent at 2026-12-05T01:00:00Z, " +
				"had no answer within 2s",
		},
		"a short attempt timeout": {
			err: &OpenError{Namespace: "n", Address: "http://127.0.0.1:1", Since: at, Until: at, LastSent: at, Waited: 250 * time.Millisecond},
			want: "requests to http://127.0.0.1:1 from namespace n are paused since 2026-12-05T01:00:00Z until 2026-12-05T01:00:00Z, " +
				"when one trial request goes through: the last one, sent at 2026-12-05T01:00:00Z, had no answer within 250ms",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.err.Error()); diff != "" {
				t.Errorf("Error() (-want +got):\n%s", diff)
			}
			if !errors.Is(fmt.Errorf("GET: %w", tc.err), ErrOpen) {
				t.Error("the error does not match ErrOpen")
			}
		})
	}
}

// TestPrune checks that circuits nobody tries any more are forgotten.
func TestPrune(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	b := New(clk, WithCoolDown(time.Second, 2*time.Second))
	open := func(k key) {
		ticket, err := b.Allow(k.namespace, k.address)
		if err != nil {
			t.Fatal(err)
		}
		ticket.Done(Unanswered)
	}
	open(aToHung)
	clk.SetTime(clk.Now().Add(4 * time.Second)) // the cool-down ended 3s ago, more than the maximum pause
	open(bToHung)
	if got := b.Open(); got != 1 {
		t.Errorf("%d circuits open, want 1: the first one was forgotten", got)
	}
}
