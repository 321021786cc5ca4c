package circuit

import (
	"errors"
	"fmt"
	"time"
)

// ErrOpen matches every *OpenError: a request not sent because its
// circuit is open. Retrying it before the time the error names fails the
// same way, at once.
var ErrOpen = errors.New("requests paused: the server left one unanswered")

// OpenError is a request not sent because the circuit of its namespace
// and address is open. Its text names the address as scheme://host:port,
// never a path, userinfo or query.
type OpenError struct {
	// Namespace is the namespace whose requests are paused.
	Namespace string
	// Address is the server's scheme://host:port.
	Address string
	// Since is when the circuit opened.
	Since time.Time
	// Until is when its cool-down ends: the first request after it is a
	// trial.
	Until time.Time
	// TrialSent is when the trial under way was sent; zero when none is.
	TrialSent time.Time
	// LastSent is when the last request without an answer was sent, and
	// Waited how long it waited for one.
	LastSent time.Time
	Waited   time.Duration
}

// Error implements error, as "requests to <address> from namespace <ns>
// are paused since <time> until <time>: the last one, sent at <time>, had
// no answer within <duration>", times in RFC 3339 UTC.
func (e *OpenError) Error() string {
	next := "until " + stamp(e.Until) + ", when one trial request goes through"
	if !e.TrialSent.IsZero() {
		next = "while a trial request, sent at " + stamp(e.TrialSent) + ", awaits its answer"
	}
	return fmt.Sprintf("requests to %s from namespace %s are paused since %s %s: the last one, sent at %s, had no answer within %s",
		e.Address, e.Namespace, stamp(e.Since), next, stamp(e.LastSent), roundWait(e.Waited))
}

// Is reports whether target is ErrOpen.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// stamp prints t as RFC 3339 in UTC, as the operator's messages print
// times.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// roundWait prints d to the second, or to the millisecond under a second.
func roundWait(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
