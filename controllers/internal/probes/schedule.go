package probes

import (
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Schedule remembers, in memory, when each object was last probed and
// with which inputs, so that a reconcile triggered by a watch event does not
// probe again before the interval has passed. New inputs (a new generation,
// rotated credentials) make a probe due at once. After a restart, objects
// whose status already describes a probe are seeded at a random point of
// their interval (see seed), and the others are probed at once.
type Schedule struct {
	mu   sync.Mutex
	last map[types.NamespacedName]probeRecord
}

type probeRecord struct {
	at     time.Time
	inputs string
	next   time.Duration
}

// NewSchedule returns a schedule that knows no object yet.
func NewSchedule() *Schedule {
	return &Schedule{last: map[types.NamespacedName]probeRecord{}}
}

// Due reports whether key must be probed now, and otherwise how long until
// it must (0 when only new inputs make it Due: periodic probing is off).
func (s *Schedule) Due(key types.NamespacedName, inputs string, now time.Time) (bool, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.last[key]
	if !ok || rec.inputs != inputs {
		return true, 0
	}
	if rec.next <= 0 {
		return false, 0
	}
	if wait := rec.at.Add(rec.next).Sub(now); wait > 0 {
		return false, wait
	}
	return true, 0
}

// Probed records a probe of key that ended at end and returns the
// jittered wait until the next one, counted from that end; an interval of
// 0 means no periodic probe.
func (s *Schedule) Probed(key types.NamespacedName, inputs string, end time.Time, interval time.Duration) time.Duration {
	next := jitter(interval)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last[key] = probeRecord{at: end, inputs: inputs, next: next}
	return next
}

// PullIn brings key's next probe forward to t, at the latest, and returns
// the wait from now until it is due (at least a millisecond). It does
// nothing, and returns false, when key is unknown or was probed with other
// inputs (a probe is due at once anyway), or when the last probe ended at
// or after t: that probe already ran past t, so that a probe whose work
// failed is not repeated at once but at the interval.
func (s *Schedule) PullIn(key types.NamespacedName, inputs string, t, now time.Time) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.last[key]
	if !ok || rec.inputs != inputs || !t.After(rec.at) {
		return 0, false
	}
	if rec.next <= 0 || rec.at.Add(rec.next).After(t) {
		rec.next = t.Sub(rec.at)
		s.last[key] = rec
	}
	return max(rec.at.Add(rec.next).Sub(now), time.Millisecond), true
}

// Seed schedules the first probe of key, when nothing is known of it yet,
// at a random point of interval from now: after a restart the status of
// key already holds a probe, so the next one can wait, and seeding every
// object this way spreads their probes over the interval. It does nothing
// when key is known or interval is 0.
func (s *Schedule) Seed(key types.NamespacedName, inputs string, now time.Time, interval time.Duration) {
	if interval <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.last[key]; ok {
		return
	}
	first := time.Duration(rand.Int64N(int64(interval))) //nolint:gosec // G404: spreads first probes over the interval; nothing secret depends on it
	s.last[key] = probeRecord{at: now, inputs: inputs, next: first}
}

// Expire makes a probe of key due at once, whatever its inputs: what its
// last probe learned no longer stands (what it published was withdrawn).
// Unlike Forget, it leaves no room for Seed to put the probe off.
func (s *Schedule) Expire(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last[key] = probeRecord{} // no fingerprint is empty: Due differs
}

// Forget drops what is known of key, when the object is deleted.
func (s *Schedule) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.last, key)
}

// jitter spreads probes of many backends: it returns d plus up to 10%.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d + time.Duration(rand.Int64N(int64(d)/10+1)) //nolint:gosec // G404: spreads probes over time; nothing secret depends on it
}
