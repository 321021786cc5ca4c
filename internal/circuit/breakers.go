package circuit

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Defaults of the cool-down (see WithCoolDown).
const (
	// DefaultCoolDown is the pause after a first request without an answer.
	DefaultCoolDown = 30 * time.Second
	// DefaultMaxCoolDown bounds the pause, which doubles on each trial
	// without an answer.
	DefaultMaxCoolDown = 5 * time.Minute
)

// Breakers are the circuits of every (namespace, address) pair. Create
// them with New; they are safe for concurrent use. Only open circuits are
// kept: a closed circuit is no entry at all.
type Breakers struct {
	clock             clock.PassiveClock
	coolDown, maxCool time.Duration

	mu   sync.Mutex
	open map[key]*state
}

// key names one circuit.
type key struct{ namespace, address string }

// state is an open circuit.
type state struct {
	// timeouts counts the requests without an answer since the circuit
	// opened: the first, and each failed trial. The cool-down doubles with
	// each.
	timeouts int
	// since is when the circuit opened; until is when its cool-down ends.
	since, until time.Time
	// lastSent is when the last request without an answer was sent, and
	// waited how long it waited for one.
	lastSent time.Time
	waited   time.Duration
	// trialSent is when the trial under way was sent; zero when none is.
	trialSent time.Time
}

// Option configures Breakers.
type Option func(*Breakers)

// WithCoolDown sets the first pause (first) and its bound (maxCoolDown);
// both must be positive, and first at most maxCoolDown.
func WithCoolDown(first, maxCoolDown time.Duration) Option {
	return func(b *Breakers) { b.coolDown, b.maxCool = first, maxCoolDown }
}

// New returns Breakers, all closed, reading the time from clk.
func New(clk clock.PassiveClock, opts ...Option) *Breakers {
	b := &Breakers{clock: clk, coolDown: DefaultCoolDown, maxCool: DefaultMaxCoolDown, open: map[key]*state{}}
	for _, opt := range opts {
		opt(b)
	}
	return b
}

// Outcome is how a request that went through ended.
type Outcome int

const (
	// Answered is an answer of any status, or an error that came without
	// waiting out a deadline (refused, reset, a TLS error): the server, or
	// the network in front of it, told the truth. It closes the circuit.
	Answered Outcome = iota
	// Unanswered is a request that timed out waiting for an answer. It
	// opens the circuit, or opens it again after a trial.
	Unanswered
	// Abandoned is a request its caller cancelled before any answer: it
	// tells nothing about the server.
	Abandoned
)

// Ticket is a request Allow let through; its caller reports how it ended
// with Done, once.
type Ticket struct {
	b     *Breakers
	key   key
	sent  time.Time
	trial bool
}

// Allow asks to send a request of namespace to address (see Address). It
// returns a ticket when the circuit is closed, or when its cool-down is
// over and no trial is under way (the request is then the trial), and an
// *OpenError otherwise.
func (b *Breakers) Allow(namespace, address string) (*Ticket, error) {
	k := key{namespace: namespace, address: address}
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	s, open := b.open[k]
	if !open {
		return &Ticket{b: b, key: k, sent: now}, nil
	}
	if s.trialSent.IsZero() && !now.Before(s.until) {
		s.trialSent = now
		return &Ticket{b: b, key: k, sent: now, trial: true}, nil
	}
	return nil, &OpenError{Namespace: namespace, Address: address, Since: s.since, Until: s.until,
		TrialSent: s.trialSent, LastSent: s.lastSent, Waited: s.waited}
}

// Done reports how the ticket's request ended: an answer closes the
// circuit; a request without one opens it, when it went through while the
// circuit was closed or as its trial (the requests already under way when
// it opened do not lengthen the pause); a trial abandoned lets the next
// request be the trial.
func (t *Ticket) Done(outcome Outcome) {
	b := t.b
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	s, open := b.open[t.key]
	switch {
	case outcome == Answered:
		delete(b.open, t.key)
	case outcome == Abandoned:
		if open && t.trial {
			s.trialSent = time.Time{}
		}
	case !open:
		b.pruneLocked(now)
		b.open[t.key] = &state{timeouts: 1, since: now, until: now.Add(b.coolDown), lastSent: t.sent, waited: now.Sub(t.sent)}
	case t.trial:
		s.timeouts++
		s.until = now.Add(b.coolDownAfter(s.timeouts))
		s.lastSent, s.waited, s.trialSent = t.sent, now.Sub(t.sent), time.Time{}
	}
}

// coolDownAfter is the pause after the n-th request without an answer:
// the first pause, doubled n-1 times, at most maxCool.
func (b *Breakers) coolDownAfter(n int) time.Duration {
	d := b.coolDown
	for i := 1; i < n && d < b.maxCool; i++ {
		d *= 2
	}
	return min(d, b.maxCool)
}

// pruneLocked forgets the circuits nobody has tried since their cool-down
// ended a maximum cool-down ago (their backends are gone, or point
// elsewhere), so that the circuits kept stay as few as the addresses in
// use.
func (b *Breakers) pruneLocked(now time.Time) {
	for k, s := range b.open {
		if s.trialSent.IsZero() && now.Sub(s.until) > b.maxCool {
			delete(b.open, k)
		}
	}
}

// Open reports how many circuits are open.
func (b *Breakers) Open() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.open)
}
