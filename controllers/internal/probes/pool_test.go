package probes

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/infrastate/backend-operator/controllers/internal/budget"
)

// probeHarness runs a prober with probes that block until released, and
// records which started.
type probeHarness struct {
	t        *testing.T
	p        *Pool
	mu       sync.Mutex
	started  []string
	release  map[string]chan any
	ctxs     map[string]context.Context
	notified chan string
	stop     context.CancelFunc
	stopped  chan struct{}
	// reserve is what the probes submitted reserve.
	reserve int64
}

func newProbeHarness(t *testing.T, limit, perNamespace int, opts ...PoolOption) *probeHarness {
	t.Helper()
	h := &probeHarness{
		t:        t,
		p:        NewPool(limit, perNamespace, clocktesting.NewFakePassiveClock(time.Unix(1000, 0)), opts...),
		release:  map[string]chan any{},
		ctxs:     map[string]context.Context{},
		notified: make(chan string, 100),
		stopped:  make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	go func() {
		defer close(h.stopped)
		_ = h.p.Start(ctx)
	}()
	h.waitPoolStarted()
	t.Cleanup(func() {
		h.mu.Lock()
		for _, ch := range h.release {
			select {
			case ch <- nil:
			default:
			}
		}
		h.mu.Unlock()
		cancel()
		<-h.stopped
	})
	return h
}

// waitPoolStarted waits until the pool's Start has run, so that every
// submission dispatches at once: a test that submitted before it would
// see its probes dispatched together, in turn order, instead.
func (h *probeHarness) waitPoolStarted() {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.p.mu.Lock()
		started := h.p.base != nil
		h.p.mu.Unlock()
		if started {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatal("the pool never started")
		}
		time.Sleep(time.Millisecond)
	}
}

func key(ns, name string) Key {
	return Key{Kind: "Test", NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

// submit queues a probe named ns/name that blocks until released or
// cancelled, and returns what it is released with.
func (h *probeHarness) submit(ns, name, inputs string) {
	run, notify := h.probe(ns, name)
	h.p.Submit(key(ns, name), inputs, h.reserve, run, notify)
}

// submitAndAwait submits the probe submit does with SubmitAndAwait, and
// returns what SubmitAndAwait returns.
func (h *probeHarness) submitAndAwait(ns, name, inputs string, grace time.Duration) bool {
	run, notify := h.probe(ns, name)
	return h.p.SubmitAndAwait(h.t.Context(), key(ns, name), inputs, h.reserve, run, notify, grace)
}

// probe is the probe named ns/name of submit, and its notification.
func (h *probeHarness) probe(ns, name string) (Func, func(context.Context)) {
	id := ns + "/" + name
	ch := make(chan any, 1)
	h.mu.Lock()
	h.release[id] = ch
	h.mu.Unlock()
	return func(ctx context.Context) any {
		h.mu.Lock()
		h.started = append(h.started, id)
		h.ctxs[id] = ctx
		h.mu.Unlock()
		select {
		case v := <-ch:
			return v
		case <-ctx.Done():
			return "cancelled"
		}
	}, func(context.Context) { h.notified <- id }
}

// finish releases ns/name with value and waits for its notification.
func (h *probeHarness) finish(ns, name string, value any) {
	h.t.Helper()
	id := ns + "/" + name
	h.mu.Lock()
	ch := h.release[id]
	h.mu.Unlock()
	ch <- value
	select {
	case got := <-h.notified:
		if got != id {
			h.t.Fatalf("notified %s, want %s", got, id)
		}
	case <-time.After(10 * time.Second):
		h.t.Fatalf("%s was never notified", id)
	}
}

// waitStarted waits until exactly want have started, in any order:
// probes started together run in goroutines of their own.
func (h *probeHarness) waitStarted(want ...string) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		got := append([]string(nil), h.started...)
		h.mu.Unlock()
		if len(got) >= len(want) || time.Now().After(deadline) {
			if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				h.t.Fatalf("started probes (-want +got):\n%s", diff)
			}
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// settle gives started goroutines a moment to show up before a test
// asserts that nothing more started.
func (h *probeHarness) settle() { time.Sleep(50 * time.Millisecond) }

func TestProberBoundsAndFairness(t *testing.T) {
	h := newProbeHarness(t, 3, 2)
	// Four hung probes of tenant a: only two run.
	for _, name := range []string{"1", "2", "3", "4"} {
		h.submit("a", name, "in")
	}
	h.waitStarted("a/1", "a/2")
	h.settle()
	h.waitStarted("a/1", "a/2")

	// Another tenant's probe starts at once, whatever a has queued.
	h.submit("b", "1", "in")
	h.waitStarted("a/1", "a/2", "b/1")

	// The global bound holds: c waits for a free slot.
	h.submit("c", "1", "in")
	h.settle()
	h.waitStarted("a/1", "a/2", "b/1")
	h.wantCounts(3, 3) // a/3, a/4 and c/1 wait

	// When a probe of a ends, the slot goes to c, which runs none, before
	// a's queued
	h.finish("a", "1", "done")
	h.waitStarted("a/1", "a/2", "b/1", "c/1")
	h.finish("b", "1", "done")
	h.waitStarted("a/1", "a/2", "b/1", "c/1", "a/3")
	h.wantCounts(1, 3) // a/4 waits; a/2, c/1 and a/3 run
}

// wantCounts fails unless the pool counts queued probes waiting and
// running ones running.
func (h *probeHarness) wantCounts(queued, running int) {
	h.t.Helper()
	if q, r := h.p.Counts(); q != queued || r != running {
		h.t.Errorf("Counts() = %d queued, %d running; want %d, %d", q, r, queued, running)
	}
}

func TestProberResults(t *testing.T) {
	h := newProbeHarness(t, 2, 2)
	k := key("ns", "obj")

	if res, pending := h.p.Poll(k, "v1"); res != nil || pending {
		t.Fatalf("poll() before any probe = %v, %t", res, pending)
	}
	h.submit("ns", "obj", "v1")
	h.waitStarted("ns/obj")
	if res, pending := h.p.Poll(k, "v1"); res != nil || !pending {
		t.Fatalf("poll() while running = %v, %t; want pending", res, pending)
	}
	h.finish("ns", "obj", "learned")
	res, pending := h.p.Poll(k, "v1")
	if pending || res == nil {
		t.Fatalf("poll() after the probe = %v, %t; want its result", res, pending)
	}
	if diff := cmp.Diff(Result{Inputs: "v1", Finished: time.Unix(1000, 0), Value: "learned"}, *res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if again, _ := h.p.Poll(k, "v1"); again == nil {
		t.Errorf("a result is handed out until it is acknowledged; second poll() = nil")
	}
	h.p.Ack(k, res)
	if res, pending := h.p.Poll(k, "v1"); res != nil || pending {
		t.Errorf("poll() after ack = %v, %t; want nothing", res, pending)
	}
}

func TestProberDropsStaleProbes(t *testing.T) {
	cases := map[string]func(h *probeHarness){
		"new inputs": func(h *probeHarness) {
			if res, pending := h.p.Poll(key("ns", "obj"), "v2"); res != nil || pending {
				t.Fatalf("poll() with new inputs = %v, %t; want nothing, the old probe dropped", res, pending)
			}
		},
		"forgotten": func(h *probeHarness) { h.p.Forget(key("ns", "obj")) },
		"replaced":  func(h *probeHarness) { h.submit("ns", "obj", "v2") },
	}
	for name, drop := range cases {
		t.Run(name, func(t *testing.T) {
			h := newProbeHarness(t, 1, 1)
			h.submit("ns", "obj", "v1")
			h.submit("ns", "queued", "v1")
			h.waitStarted("ns/obj")
			h.mu.Lock()
			ctx := h.ctxs["ns/obj"]
			h.mu.Unlock()

			drop(h)
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the running probe was not cancelled")
			}
			// The slot is free again: the queued probe starts, and the
			// dropped one's result is never handed out.
			h.waitStarted("ns/obj", "ns/queued")
			if res, _ := h.p.Poll(key("ns", "obj"), "v1"); res != nil {
				t.Errorf("the dropped probe's result was handed out: %v", res)
			}
		})
	}
}

func TestProberStopsWithTheManager(t *testing.T) {
	p := NewPool(1, 1, clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = p.Start(ctx); close(stopped) }()
	started, cancelled := make(chan struct{}), make(chan struct{})
	p.Submit(key("ns", "hung"), "v", 0, func(ctx context.Context) any {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil
	}, func(context.Context) { t.Error("a probe ended by the manager's stop must not notify") })
	var ran atomic.Bool
	p.Submit(key("ns", "queued"), "v", 0, func(context.Context) any { ran.Store(true); return nil }, func(context.Context) {})
	<-started
	cancel()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after its context ended")
	}
	<-cancelled
	if ran.Load() {
		t.Error("a queued probe started after the manager stopped")
	}
}

// TestProberAwait checks the wait of a reconcile for the probe it
// submitted: a probe that ends within the grace, even at once, is handed
// to the waiter without the notification that would reconcile the object
// again; one that does not is left to run and notifies when it ends.
func TestProberAwait(t *testing.T) {
	const long = 10 * time.Second
	const short = 20 * time.Millisecond
	k := key("ns", "obj")

	// noNotification fails when h notified a probe: its waiter took the
	// result.
	noNotification := func(t *testing.T, h *probeHarness) {
		t.Helper()
		h.settle()
		select {
		case id := <-h.notified:
			t.Fatalf("%s was notified, although its waiter took the result", id)
		default:
		}
	}

	t.Run("ends within the grace: handed to the waiter, no notification", func(t *testing.T) {
		h := newProbeHarness(t, 2, 2)
		go func() {
			// Once the probe runs, while its submitter waits.
			for {
				h.mu.Lock()
				release, started := h.release["ns/obj"], len(h.started) > 0
				h.mu.Unlock()
				if started {
					release <- "learned"
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		if !h.submitAndAwait("ns", "obj", "v1", long) {
			t.Fatal("SubmitAndAwait() = false, want the probe to end within the grace")
		}
		if res, _ := h.p.Poll(k, "v1"); res == nil || res.Value != "learned" {
			t.Errorf("poll() after SubmitAndAwait = %v, want the result", res)
		}
		noNotification(t, h)
	})

	t.Run("ends at once: handed to the waiter, no notification", func(t *testing.T) {
		for range 50 { // the probe ends while SubmitAndAwait returns: a race Submit then a wait loses
			h := newProbeHarness(t, 2, 2)
			ended := h.p.SubmitAndAwait(t.Context(), k, "v1", 0,
				func(context.Context) any { return "at once" },
				func(context.Context) { h.notified <- "ns/obj" }, long)
			if !ended {
				t.Fatal("SubmitAndAwait() = false, want the probe to end within the grace")
			}
			if res, _ := h.p.Poll(k, "v1"); res == nil || res.Value != "at once" {
				t.Fatalf("poll() after SubmitAndAwait = %v, want the result", res)
			}
			noNotification(t, h)
		}
	})

	t.Run("outlasts the grace: left to run, and notifies when it ends", func(t *testing.T) {
		h := newProbeHarness(t, 2, 2)
		if h.submitAndAwait("ns", "obj", "v1", short) {
			t.Fatal("SubmitAndAwait() = true, want false: the probe is still running")
		}
		h.finish("ns", "obj", "late") // fails unless notified
	})
}

// TestProberKeepsSlotsForIdleNamespaces checks that namespaces whose
// servers hang leave the idle reserve to namespaces that run no probe.
func TestProberKeepsSlotsForIdleNamespaces(t *testing.T) {
	// 8 slots, 4 per namespace: 2 are kept for namespaces running none.
	h := newProbeHarness(t, 8, 4)
	for _, ns := range []string{"a", "b"} {
		for _, name := range []string{"1", "2", "3", "4"} {
			h.submit(ns, name, "in")
		}
	}
	// a, whose server hangs, runs up to its bound (4); b, idle until its
	// first probe, starts that one and then fills the 6 slots not kept.
	want := []string{"a/1", "a/2", "a/3", "a/4", "b/1", "b/2"}
	h.waitStarted(want...)
	h.settle()
	h.waitStarted(want...)

	// Two more namespaces start a probe each at once, the first of their
	// queue, in the 2 kept slots; their second waits like b's.
	for _, ns := range []string{"c", "d"} {
		h.submit(ns, "1", "in")
		h.submit(ns, "2", "in")
	}
	want = append(want, "c/1", "d/1")
	h.waitStarted(want...)
	h.settle()
	h.waitStarted(want...)

	// A probe of a ends: 7 run, so the freed slot is one of the kept
	// ones, and no waiting probe of b, c or d takes it; a namespace
	// that runs none does.
	h.finish("a", "1", "done")
	h.settle()
	h.waitStarted(want...)
	h.submit("e", "1", "in")
	want = append(want, "e/1")
	h.waitStarted(want...)
	h.settle()
	h.waitStarted(want...)
}

// heldResult is a probe result that holds n bytes.
type heldResult int64

func (r heldResult) HeldBytes() int64 { return int64(r) }

func TestProberMemoryBudget(t *testing.T) {
	memory := budget.New(budget.Config{Name: "read memory", PerNamespace: 100, PerNamespaceFlag: "share", Total: 150, TotalFlag: "total"},
		clocktesting.NewFakePassiveClock(time.Unix(1000, 0)))
	h := newProbeHarness(t, 10, 10, WithMemory(memory))
	h.reserve = 40

	// Two reads of a fit its share of 100; the third waits for memory,
	// not for a slot.
	for _, name := range []string{"1", "2", "3"} {
		h.submit("a", name, "in")
	}
	h.waitStarted("a/1", "a/2")
	h.settle()
	h.waitStarted("a/1", "a/2")
	if got := memory.Used("a"); got != 80 {
		t.Fatalf("a uses %d of its share while two reads run, want their reservations, 80", got)
	}

	// The total (150) leaves b room for one read of 40, not two.
	h.submit("b", "1", "in")
	h.submit("b", "2", "in")
	h.waitStarted("a/1", "a/2", "b/1")
	h.settle()
	h.waitStarted("a/1", "a/2", "b/1")

	// a/1 ends holding 35 bytes: its result keeps them until acknowledged,
	// which frees 5 of a's reservation: not enough for a/3 (40), and
	// the total's 5 more not enough for b/2.
	h.finish("a", "1", heldResult(35))
	h.settle()
	h.waitStarted("a/1", "a/2", "b/1")
	if got := memory.Used("a"); got != 75 {
		t.Fatalf("a uses %d, want a/1's result (35) and a/2's reservation (40)", got)
	}

	// Acknowledging a/1's result gives its 35 back: a/3 starts.
	res, _ := h.p.Poll(key("a", "1"), "in")
	if res == nil {
		t.Fatal("a/1's result cannot be polled")
	}
	h.p.Ack(key("a", "1"), res)
	h.waitStarted("a/1", "a/2", "b/1", "a/3")

	// A result that is no Sizer keeps its reservation; a forgotten one
	// gives it back, and b/2 starts.
	h.finish("b", "1", "plain")
	if got := memory.Used("b"); got != 40 {
		t.Fatalf("b uses %d, want b/1's reservation kept by its result, 40", got)
	}
	h.finish("a", "2", heldResult(0))
	h.waitStarted("a/1", "a/2", "b/1", "a/3", "b/2")
	h.p.Forget(key("b", "1"))
	if got := memory.Used("b"); got != 40 {
		t.Fatalf("b uses %d once b/1 is forgotten, want b/2's reservation, 40", got)
	}

	// A running probe that is superseded gives its reservation back when it ends.
	h.p.Forget(key("b", "2"))
	deadline := time.Now().Add(10 * time.Second)
	for memory.Used("b") != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := memory.Used("b"); got != 0 {
		t.Fatalf("b uses %d after its running probe was forgotten, want 0", got)
	}
}
