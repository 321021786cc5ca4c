package probes

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/infrastate/backend-operator/controllers/internal/budget"
)

// Pool runs probes off the reconcile path, so that a tenant whose
// servers are slow, hung or rate-limiting never holds the workers that
// render other tenants' backends. At most limit probes run at once, and at
// most perNamespace of one namespace; a free slot goes to the namespace
// with the fewest running probes, so a namespace with many queued probes
// cannot delay another's. The last slots (see idleReserve) are kept for
// namespaces that run no probe: however many namespaces' servers hang,
// a namespace whose probes are not running gets a slot at once.
//
// With a memory budget (WithMemory), a probe also reserves the most it
// may hold while it runs, from its namespace's share, and starts only
// when the share and the total hold it; once it ends, its result keeps
// what it holds (see Sizer) until it is acknowledged, forgotten or
// replaced. Finished results waiting to be written to status count, so a
// namespace whose results pile up faster than they are written waits,
// instead of growing the manager's memory.
//
// Probes run under the manager's context, which Start stores in base, and
// not under the context of the reconcile that submitted them: a probe
// outlives that reconcile, and ends when it is superseded or forgotten, or
// the manager stops.
//
// A probe works on copies of what it needs and returns a result; its
// notify function re-enqueues the object, whose next reconcile takes the
// result with Poll and writes it to status. The reconciler stays the only
// writer of status.
type Pool struct {
	limit, perNamespace int
	// idleReserve are the slots kept for namespaces running no probe.
	idleReserve int
	clock       clock.PassiveClock
	// memory is the read memory budget; nil bounds nothing.
	memory *budget.Shares

	mu      sync.Mutex
	idle    *sync.Cond             // signalled whenever a probe ends
	base    context.Context        //nolint:containedctx // the manager's context, which probes run under; see prober
	closed  bool                   // the manager stopped: nothing starts any more
	running map[*probeJob]struct{} // running probes
	active  map[string]int         // running probes per namespace
	queues  map[string][]*probeJob // queued probes per namespace, FIFO
	ring    []string               // namespaces with queued probes, in turn order
	jobs    map[Key]*probeJob      // the current probe of each object, queued or running
	done    map[Key]Result         // finished results not yet polled
	// held is what each finished result of done holds of the memory
	// budget.
	held map[Key]int64
}

// Sizer is a probe result that knows how many bytes it holds: what it
// keeps of the memory budget until it is acknowledged. A result that is
// no Sizer keeps its probe's reservation.
type Sizer interface {
	HeldBytes() int64
}

// PoolOption configures a Pool.
type PoolOption func(*Pool)

// WithMemory makes the probes reserve from memory (see Pool).
func WithMemory(memory *budget.Shares) PoolOption { return func(p *Pool) { p.memory = memory } }

// Key names one object of one kind.
type Key struct {
	// Kind is the object's kind.
	Kind string
	types.NamespacedName
}

// Func runs one probe with ctx and returns what it learned.
type Func func(ctx context.Context) any

// probeJob is one submitted probe.
type probeJob struct {
	key    Key
	inputs string
	// reserve is the most the probe may hold while it runs.
	reserve int64
	run     Func
	notify  func(ctx context.Context)
	cancel  context.CancelFunc // set while it runs
	// finished, set while a reconcile awaits the probe (see await), is
	// closed when it ends, instead of notify being called.
	finished chan struct{}
}

// Result is a finished probe: what it returned, the inputs it was
// submitted with, and when it ended.
type Result struct {
	// Inputs are the inputs the probe was submitted with.
	Inputs string
	// Finished is when it ended.
	Finished time.Time
	// Value is what it returned.
	Value any
}

// NewPool returns a pool running at most limit probes at once and at
// most perNamespace per namespace. Probes start once Start has been called.
func NewPool(limit, perNamespace int, clk clock.PassiveClock, opts ...PoolOption) *Pool {
	p := &Pool{
		limit:        max(limit, 1),
		perNamespace: max(perNamespace, 1),
		clock:        clk,
		running:      map[*probeJob]struct{}{},
		active:       map[string]int{},
		queues:       map[string][]*probeJob{},
		jobs:         map[Key]*probeJob{},
		done:         map[Key]Result{},
		held:         map[Key]int64{},
	}
	p.idleReserve = idleReserve(p.limit, p.perNamespace)
	for _, opt := range opts {
		opt(p)
	}
	p.idle = sync.NewCond(&p.mu)
	return p
}

// idleReserve is how many of limit slots are kept for namespaces that run
// no probe: a quarter, at most perNamespace. Namespaces already running
// probes fill the others; with the defaults (16 slots, 4 per namespace),
// three namespaces whose servers all hang fill 12, and the next four
// namespaces still start a probe each at once.
func idleReserve(limit, perNamespace int) int {
	return min(limit/4, perNamespace)
}

// Start lets probes run until ctx ends, then cancels the running ones and
// waits for them. It implements manager.Runnable.
func (p *Pool) Start(ctx context.Context) error {
	p.mu.Lock()
	p.base = ctx
	p.dispatchLocked(ctx)
	p.mu.Unlock()

	<-ctx.Done()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for job := range p.running {
		job.cancel()
	}
	for len(p.running) > 0 {
		p.idle.Wait()
	}
	return nil
}

// Poll returns the finished result of key for inputs: the caller writes it
// to status, and acknowledges it with ack once the status is written, so
// that a failed write loses nothing; until then every Poll returns it.
// pending is true while a probe for these inputs is queued or running. A
// result or a probe for other inputs is dropped (and the probe cancelled):
// it would describe a spec or credentials that no longer apply.
func (p *Pool) Poll(key Key, inputs string) (result *Result, pending bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if res, ok := p.done[key]; ok {
		if res.Inputs == inputs {
			return &res, false
		}
		p.dropResultLocked(key)
	}
	job, ok := p.jobs[key]
	if !ok {
		return nil, false
	}
	if job.inputs == inputs {
		return nil, true
	}
	p.dropLocked(key)
	return nil, false
}

// Submit queues a probe of key with inputs, which may hold up to reserve
// bytes while it runs (see WithMemory). run gets a context that ends
// when the probe is superseded or forgotten, or the manager stops; notify
// is called once its result can be polled, with a context that ends when
// the manager stops. A probe already queued or running for key is
// replaced.
func (p *Pool) Submit(key Key, inputs string, reserve int64, run Func, notify func(ctx context.Context)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.submitLocked(key, inputs, reserve, run, notify)
}

// SubmitAndAwait submits a probe as Submit does and waits up to grace (or
// until ctx ends) for it to end, and reports whether it did: its result
// can then be polled, and notify is not called, since the caller writes
// the result itself; otherwise notify is called when it ends. The wait is
// registered before the probe can start, so a probe that ends at once is
// handed to the caller too: a wait begun after the submission would miss
// one that ended in between, and notify it.
func (p *Pool) SubmitAndAwait(ctx context.Context, key Key, inputs string, reserve int64, run Func, notify func(ctx context.Context), grace time.Duration) bool {
	p.mu.Lock()
	job := p.submitLocked(key, inputs, reserve, run, notify)
	finished := make(chan struct{})
	job.finished = finished // the probe's goroutine finishes under p.mu: not before this
	p.mu.Unlock()
	return p.await(ctx, job, finished, grace)
}

// submitLocked queues and returns a probe of key (see Submit).
func (p *Pool) submitLocked(key Key, inputs string, reserve int64, run Func, notify func(ctx context.Context)) *probeJob {
	p.dropLocked(key)
	job := &probeJob{key: key, inputs: inputs, reserve: reserve, run: run, notify: notify}
	p.jobs[key] = job
	ns := key.Namespace
	if len(p.queues[ns]) == 0 {
		p.ring = append(p.ring, ns)
	}
	p.queues[ns] = append(p.queues[ns], job)
	p.dispatchLocked(p.base)
	return job
}

// await waits up to grace, or until ctx ends, for job, whose finished
// channel is finished, to end (see SubmitAndAwait).
func (p *Pool) await(ctx context.Context, job *probeJob, finished chan struct{}, grace time.Duration) bool {
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-finished:
		return true
	case <-timer.C:
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-finished: // it ended meanwhile, and notify was not called
		return true
	default:
		job.finished = nil
		return false
	}
}

// Pending is how many probes are queued or running.
func (p *Pool) Pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.jobs)
}

// Counts is how many probes wait for a slot (or for their namespace's
// bound or memory share) and how many run, superseded ones included until
// they end.
func (p *Pool) Counts() (queued, running int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range p.queues {
		queued += len(q)
	}
	return queued, len(p.running)
}

// Ack drops the result res of key once its status is written, unless a
// newer result replaced it.
func (p *Pool) Ack(key Key, res *Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if done, ok := p.done[key]; ok && done.Inputs == res.Inputs && done.Finished.Equal(res.Finished) {
		p.dropResultLocked(key)
	}
}

// Forget drops everything known of key: a queued probe, a running one
// (cancelled) and a result not yet polled. For deleted objects.
func (p *Pool) Forget(key Key) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(key)
	p.dropResultLocked(key)
}

// dropResultLocked drops the finished result of key, giving back what it
// held, and starts the probes that were waiting for that memory.
func (p *Pool) dropResultLocked(key Key) {
	if _, ok := p.done[key]; !ok {
		return
	}
	delete(p.done, key)
	if held := p.held[key]; held > 0 && p.memory != nil {
		p.memory.Give(key.Namespace, held)
	}
	delete(p.held, key)
	p.dispatchLocked(p.base)
}

// dropLocked cancels and forgets the probe of key, queued or running.
func (p *Pool) dropLocked(key Key) {
	job, ok := p.jobs[key]
	if !ok {
		return
	}
	delete(p.jobs, key)
	if job.cancel != nil { // running: its result will be dropped
		job.cancel()
		return
	}
	queue := p.queues[key.Namespace]
	for i, queued := range queue {
		if queued == job {
			p.queues[key.Namespace] = append(queue[:i:i], queue[i+1:]...)
			break
		}
	}
	if len(p.queues[key.Namespace]) == 0 {
		p.removeFromRingLocked(key.Namespace)
	}
}

// dispatchLocked starts queued probes while the bounds allow, taking
// namespaces in turn, under base: the manager's context, which Start
// stored in p.base (nil before Start), whoever calls it.
func (p *Pool) dispatchLocked(base context.Context) {
	if base == nil || p.closed || base.Err() != nil {
		return
	}
	for len(p.running) < p.limit {
		job := p.nextLocked()
		if job == nil {
			return
		}
		p.startLocked(base, job)
	}
}

// nextLocked takes the first queued probe of the namespace with the
// fewest running probes (below its bound, and the slots kept for idle
// namespaces aside; the earliest in turn order among equals) whose first
// probe's reservation its memory share holds, and moves that namespace to
// the end of the turn order.
func (p *Pool) nextLocked() *probeJob {
	best := -1
	for i, ns := range p.ring {
		if !p.mayStartLocked(ns) {
			continue
		}
		if best < 0 || p.active[ns] < p.active[p.ring[best]] {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	ns := p.ring[best]
	queue := p.queues[ns]
	job := queue[0]
	p.queues[ns] = queue[1:]
	p.ring = append(p.ring[:best:best], p.ring[best+1:]...)
	if len(p.queues[ns]) > 0 {
		p.ring = append(p.ring, ns)
	} else {
		delete(p.queues, ns)
	}
	return job
}

// mayStartLocked reports whether the first queued probe of ns may start
// now: ns is below its bound, a namespace already running probes leaves
// the idle reserve alone, and the memory budget holds the probe's
// reservation.
func (p *Pool) mayStartLocked(ns string) bool {
	if p.active[ns] >= p.perNamespace {
		return false
	}
	if p.active[ns] > 0 && len(p.running) >= p.limit-p.idleReserve {
		return false
	}
	return p.memory == nil || p.memory.Fits(ns, p.queues[ns][0].reserve) == nil
}

// removeFromRingLocked removes ns from the turn order.
func (p *Pool) removeFromRingLocked(ns string) {
	for i, queued := range p.ring {
		if queued == ns {
			p.ring = append(p.ring[:i:i], p.ring[i+1:]...)
			break
		}
	}
	delete(p.queues, ns)
}

// startLocked runs job in a goroutine of its own, with a context derived
// from the manager's (base), not from the reconcile that submitted it: a
// probe outlives that reconcile by design.
func (p *Pool) startLocked(base context.Context, job *probeJob) {
	ctx, cancel := context.WithCancel(base)
	job.cancel = cancel
	if p.memory != nil {
		p.memory.Charge(job.key.Namespace, job.reserve) // nextLocked checked that it fits
	}
	p.running[job] = struct{}{}
	p.active[job.key.Namespace]++
	go func() {
		value := runRecovered(ctx, job.run)
		cancel()
		p.finish(job, value) // the next probes run under the manager's context, not this one's
	}()
}

// finish records a probe's result and starts the next ones. The result is
// kept only when the probe is still the current one for its object.
func (p *Pool) finish(job *probeJob, value any) {
	p.mu.Lock()
	delete(p.running, job)
	p.active[job.key.Namespace]--
	if p.active[job.key.Namespace] == 0 {
		delete(p.active, job.key.Namespace)
	}
	current := p.jobs[job.key] == job
	awaited := false
	if current {
		delete(p.jobs, job.key)
		p.dropResultLocked(job.key) // an older result, replaced
		p.done[job.key] = Result{Inputs: job.inputs, Finished: p.clock.Now(), Value: value}
		p.holdLocked(job, value)
		if job.finished != nil {
			awaited = true
			close(job.finished)
		}
	}
	if !current && p.memory != nil {
		p.memory.Give(job.key.Namespace, job.reserve)
	}
	base := p.base
	closed := p.closed || base.Err() != nil
	p.dispatchLocked(base)
	p.idle.Broadcast()
	p.mu.Unlock()
	if current && !closed && !awaited {
		job.notify(base)
	}
}

// holdLocked turns job's reservation into what its result value holds:
// its HeldBytes when it is a Sizer, its reservation otherwise.
func (p *Pool) holdLocked(job *probeJob, value any) {
	held := job.reserve
	if s, ok := value.(Sizer); ok {
		held = s.HeldBytes()
	}
	p.held[job.key] = held
	if p.memory == nil {
		return
	}
	if held < job.reserve {
		p.memory.Give(job.key.Namespace, job.reserve-held)
	} else {
		p.memory.Charge(job.key.Namespace, held-job.reserve)
	}
}

// Panic is the result of a probe that panicked: the panic is contained, as
// controller-runtime contains a Reconcile's, so that one tenant's answer
// cannot crash the manager for all.
type Panic struct {
	// Value is what the probe panicked with; Stack where it did.
	Value any
	Stack []byte
}

// runRecovered runs run and turns a panic into a Panic result.
func runRecovered(ctx context.Context, run Func) (value any) {
	defer func() {
		if r := recover(); r != nil {
			value = Panic{Value: r, Stack: debug.Stack()}
		}
	}()
	return run(ctx)
}
