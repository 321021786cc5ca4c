package budget

import (
	"fmt"
	"maps"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Config describes one budget.
type Config struct {
	// Name is what the budget bounds, as messages say it: "read memory".
	Name string
	// Unit formats an amount for messages: Bytes or Seconds.
	Unit Unit
	// PerNamespace is each namespace's share; PerNamespaceFlag the flag
	// that sets it.
	PerNamespace     int64
	PerNamespaceFlag string
	// Total bounds the sum over all namespaces; TotalFlag is the flag that
	// sets it. 0 means PerNamespace times nothing: no total.
	Total     int64
	TotalFlag string
	// Window, when set, makes the budget a rate: what a namespace used
	// drains away linearly, PerNamespace every Window (and the total
	// Total every Window).
	Window time.Duration
}

// Unit formats the amounts of a budget.
type Unit int

// The units of the budgets.
const (
	// Bytes are counted in bytes and shown in KiB or MiB.
	Bytes Unit = iota
	// Nanoseconds are counted in nanoseconds and shown in seconds.
	Nanoseconds
)

// format shows n in u.
func (u Unit) format(n int64) string {
	switch u {
	case Nanoseconds:
		return fmt.Sprintf("%.1fs", time.Duration(n).Seconds())
	default:
		switch {
		case n >= 1<<20:
			return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
		case n >= 1<<10:
			return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
		default:
			return fmt.Sprintf("%d bytes", n)
		}
	}
}

// Shares is one budget and what each namespace uses of it. It is safe for
// concurrent use.
type Shares struct {
	cfg   Config
	clock clock.PassiveClock

	mu   sync.Mutex
	used map[string]int64 // by namespace; no entry when 0
	// sum is what all namespaces use: the sum of used, except that a rate
	// budget drains it at its own rate (Total per Window).
	sum int64
	// drained is when used was last drained (rate budgets only).
	drained time.Time
}

// New returns the budget cfg describes, reading time from clk (for rate
// budgets).
func New(cfg Config, clk clock.PassiveClock) *Shares {
	return &Shares{cfg: cfg, clock: clk, used: map[string]int64{}, drained: clk.Now()}
}

// Config returns the budget's configuration.
func (s *Shares) Config() Config { return s.cfg }

// ExceededError is a request that its namespace's share, or the total,
// cannot hold.
type ExceededError struct {
	// Budget is the budget's name; Namespace the requester's.
	Budget, Namespace string
	// Used is what the namespace (or, when Total, every namespace) uses;
	// Wanted what the request asked for; Limit the share or the total.
	Used, Wanted, Limit int64
	// Total is true when the total, not the share, is exhausted.
	Total bool
	// Flag is the flag that sets Limit.
	Flag string
	unit Unit
}

func (e *ExceededError) Error() string {
	if e.Total {
		return fmt.Sprintf("the manager's %s budget is used up: all namespaces together use %s of the %s total (--%s), %s more were asked for by namespace %s",
			e.Budget, e.unit.format(e.Used), e.unit.format(e.Limit), e.Flag, e.unit.format(e.Wanted), e.Namespace)
	}
	return fmt.Sprintf("namespace %s has used its %s share: %s of %s (--%s), %s more were asked for",
		e.Namespace, e.Budget, e.unit.format(e.Used), e.unit.format(e.Limit), e.Flag, e.unit.format(e.Wanted))
}

// TryTake takes n for namespace when its share and the total hold it,
// and returns an *ExceededError otherwise.
func (s *Shares) TryTake(namespace string, n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fitsLocked(namespace, n); err != nil {
		return err
	}
	s.addLocked(namespace, n)
	return nil
}

// Fits reports, as TryTake would, whether namespace may take n now,
// without taking it.
func (s *Shares) Fits(namespace string, n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fitsLocked(namespace, n)
}

// Charge adds n to namespace's use whether or not it fits: for a rate
// budget, what was spent, measured after the fact. The next Fits or
// TryTake of the namespace sees it.
func (s *Shares) Charge(namespace string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drainLocked()
	s.addLocked(namespace, n)
}

// Give returns n of namespace's use.
func (s *Shares) Give(namespace string, n int64) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addLocked(namespace, -n)
}

// Used returns what namespace uses now.
func (s *Shares) Used(namespace string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drainLocked()
	return s.used[namespace]
}

// Usage returns what each namespace using the budget uses now.
func (s *Shares) Usage() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drainLocked()
	return maps.Clone(s.used)
}

// fitsLocked is Fits with s.mu held.
func (s *Shares) fitsLocked(namespace string, n int64) error {
	s.drainLocked()
	used := s.used[namespace]
	if used+n > s.cfg.PerNamespace {
		return &ExceededError{Budget: s.cfg.Name, Namespace: namespace, Used: used, Wanted: n, Limit: s.cfg.PerNamespace,
			Flag: s.cfg.PerNamespaceFlag, unit: s.cfg.Unit}
	}
	if s.cfg.Total > 0 && s.sum+n > s.cfg.Total {
		return &ExceededError{Budget: s.cfg.Name, Namespace: namespace, Used: s.sum, Wanted: n, Limit: s.cfg.Total, Total: true,
			Flag: s.cfg.TotalFlag, unit: s.cfg.Unit}
	}
	return nil
}

// addLocked adds n (which may be negative) to namespace's use and to
// the sum, never below 0.
func (s *Shares) addLocked(namespace string, n int64) {
	used := max(s.used[namespace]+n, 0)
	s.sum = max(s.sum+used-s.used[namespace], 0)
	if used == 0 {
		delete(s.used, namespace)
	} else {
		s.used[namespace] = used
	}
}

// drainLocked drains a rate budget's use for the time elapsed since the
// last drain: each namespace's use goes down by PerNamespace per Window,
// the sum by Total per Window.
func (s *Shares) drainLocked() {
	if s.cfg.Window <= 0 {
		return
	}
	now := s.clock.Now()
	elapsed := now.Sub(s.drained)
	share := int64(float64(s.cfg.PerNamespace) * (float64(elapsed) / float64(s.cfg.Window)))
	if share <= 0 {
		return // too soon to drain a unit: the time is kept for the next drain
	}
	s.drained = now
	sum := s.sum
	for ns, used := range s.used {
		s.addLocked(ns, -min(share, used))
	}
	s.sum = max(sum-int64(float64(s.cfg.Total)*(float64(elapsed)/float64(s.cfg.Window))), 0)
}
