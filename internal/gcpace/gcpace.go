// Package gcpace sets the Go collector's target by what the manager is
// doing: Go's default while it writes to the API server, a lower one at
// rest.
//
// A manager's heap is mostly what it holds for every object it watches,
// and the collector lets it grow by its target (GOGC) percent of what is
// live before collecting. At rest that headroom is most of the resident
// memory a platform pays for all the time, so a low target (50) keeps it
// small; but while backends are created or the manager starts, a low
// target collects twice as often as Go's default and takes about a
// quarter of the manager's CPU, on machines where the API server waits for
// the same cores. The Pacer sets Go's default (100) while the manager
// writes, and the low target once it has written nothing for a while,
// returning the memory the busy period used. GOMEMLIMIT bounds the heap in
// both.
package gcpace

import (
	"context"
	"net/http"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// Targets and timings of the Pacer the manager runs.
const (
	// BusyPercent is the collector's target while the manager writes:
	// Go's default.
	BusyPercent = 100
	// RestPercent is the collector's target at rest.
	RestPercent = 50
	// RestAfter is how long the manager writes nothing before it is at
	// rest.
	RestAfter = 10 * time.Second
	// tick is how often the Pacer looks at the writes.
	tick = time.Second
)

// Pacer sets the collector's target by the manager's writes. Count the
// writes by wrapping the transport of every client of the manager (Wrap)
// and run it (Start) for as long as the manager runs.
type Pacer struct {
	writes atomic.Uint64
	log    logr.Logger
	// setGCPercent and freeOSMemory are the runtime's, replaced by tests.
	setGCPercent func(int) int
	freeOSMemory func()
	state        State
}

// New returns a Pacer that logs its changes of target to log. It starts
// busy: a manager's start lists every object it watches.
func New(log logr.Logger) *Pacer {
	return &Pacer{log: log, setGCPercent: debug.SetGCPercent, freeOSMemory: debug.FreeOSMemory}
}

// Wrap returns rt counting the requests that write (every method but
// GET, HEAD and OPTIONS), except the renewals of the leader election
// lease, which a leader sends at rest too.
func (p *Pacer) Wrap(rt http.RoundTripper) http.RoundTripper {
	return countingTransport{next: rt, writes: &p.writes}
}

// countingTransport counts the writes it sends.
type countingTransport struct {
	next   http.RoundTripper
	writes *atomic.Uint64
}

// RoundTrip counts req when it writes, and sends it.
func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if Writes(req) {
		t.writes.Add(1)
	}
	return t.next.RoundTrip(req)
}

// Writes reports whether req is a write that makes the manager busy:
// a method other than GET, HEAD and OPTIONS, to anything but the leases of
// leader election.
func Writes(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return !strings.HasPrefix(req.URL.Path, "/apis/coordination.k8s.io/")
}

// Start sets the busy target and follows the writes until ctx ends.
func (p *Pacer) Start(ctx context.Context) error {
	p.state = State{Busy: true, Since: time.Now()}
	p.setGCPercent(BusyPercent)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-ticker.C:
			p.step(now)
		}
	}
}

// NeedLeaderElection is false: a manager waiting for the lease lists
// and collects too.
func (p *Pacer) NeedLeaderElection() bool { return false }

// step applies Next to the writes counted so far.
func (p *Pacer) step(now time.Time) {
	next, change := Next(p.state, p.writes.Load(), now)
	p.state = next
	switch change {
	case ToBusy:
		p.setGCPercent(BusyPercent)
		p.log.V(1).Info("The manager writes: the collector's target is Go's default", "gcPercent", BusyPercent)
	case ToRest:
		p.setGCPercent(RestPercent)
		// The memory the busy period used goes back to the system now,
		// not as the scavenger gets to it.
		p.freeOSMemory()
		p.log.V(1).Info("The manager is at rest: the collector's target is lower", "gcPercent", RestPercent)
	}
}

// State is what the Pacer knows: whether the manager is busy, the writes
// it had counted when it last looked, and when they last changed.
type State struct {
	Busy   bool
	Writes uint64
	Since  time.Time
}

// Change is a change of target.
type Change int

// The changes of target Next returns.
const (
	// Keep keeps the target.
	Keep Change = iota
	// ToBusy sets BusyPercent.
	ToBusy
	// ToRest sets RestPercent.
	ToRest
)

// Next returns the state after the Pacer counted writes writes at now,
// and the change of target it makes: busy as soon as the count grows, at
// rest once it has not grown for RestAfter.
func Next(s State, writes uint64, now time.Time) (State, Change) {
	if writes != s.Writes {
		next := State{Busy: true, Writes: writes, Since: now}
		if s.Busy {
			return next, Keep
		}
		return next, ToBusy
	}
	if s.Busy && now.Sub(s.Since) >= RestAfter {
		return State{Busy: false, Writes: writes, Since: now}, ToRest
	}
	return s, Keep
}
