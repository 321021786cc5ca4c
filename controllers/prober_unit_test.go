package controllers

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// probeHarness runs a prober with probes that block until released, and
// records which started.
type probeHarness struct {
	t        *testing.T
	p        *prober
	mu       sync.Mutex
	started  []string
	release  map[string]chan any
	ctxs     map[string]context.Context
	notified chan string
	stop     context.CancelFunc
	stopped  chan struct{}
}

func newProbeHarness(t *testing.T, limit, perNamespace int) *probeHarness {
	t.Helper()
	h := &probeHarness{
		t:        t,
		p:        newProber(limit, perNamespace, clocktesting.NewFakePassiveClock(time.Unix(1000, 0))),
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

func key(ns, name string) probeKey {
	return probeKey{kind: "Test", NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

// submit queues a probe named ns/name that blocks until released or
// cancelled, and returns what it is released with.
func (h *probeHarness) submit(ns, name, inputs string) {
	id := ns + "/" + name
	ch := make(chan any, 1)
	h.mu.Lock()
	h.release[id] = ch
	h.mu.Unlock()
	h.p.submit(key(ns, name), inputs, func(ctx context.Context) any {
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
	}, func(context.Context) { h.notified <- id })
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

	// When a probe of a ends, the slot goes to c, which runs none, before
	// a's queued probes.
	h.finish("a", "1", "done")
	h.waitStarted("a/1", "a/2", "b/1", "c/1")
	h.finish("b", "1", "done")
	h.waitStarted("a/1", "a/2", "b/1", "c/1", "a/3")
}

func TestProberResults(t *testing.T) {
	h := newProbeHarness(t, 2, 2)
	k := key("ns", "obj")

	if res, pending := h.p.poll(k, "v1"); res != nil || pending {
		t.Fatalf("poll() before any probe = %v, %t", res, pending)
	}
	h.submit("ns", "obj", "v1")
	h.waitStarted("ns/obj")
	if res, pending := h.p.poll(k, "v1"); res != nil || !pending {
		t.Fatalf("poll() while running = %v, %t; want pending", res, pending)
	}
	h.finish("ns", "obj", "learned")
	res, pending := h.p.poll(k, "v1")
	if pending || res == nil {
		t.Fatalf("poll() after the probe = %v, %t; want its result", res, pending)
	}
	if diff := cmp.Diff(probeResult{inputs: "v1", finished: time.Unix(1000, 0), value: "learned"}, *res, cmp.AllowUnexported(probeResult{})); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if again, _ := h.p.poll(k, "v1"); again == nil {
		t.Errorf("a result is handed out until it is acknowledged; second poll() = nil")
	}
	h.p.ack(k, res)
	if res, pending := h.p.poll(k, "v1"); res != nil || pending {
		t.Errorf("poll() after ack = %v, %t; want nothing", res, pending)
	}
}

func TestProberDropsStaleProbes(t *testing.T) {
	cases := map[string]func(h *probeHarness){
		"new inputs": func(h *probeHarness) {
			if res, pending := h.p.poll(key("ns", "obj"), "v2"); res != nil || pending {
				t.Fatalf("poll() with new inputs = %v, %t; want nothing, the old probe dropped", res, pending)
			}
		},
		"forgotten": func(h *probeHarness) { h.p.forget(key("ns", "obj")) },
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
			if res, _ := h.p.poll(key("ns", "obj"), "v1"); res != nil {
				t.Errorf("the dropped probe's result was handed out: %v", res)
			}
		})
	}
}

func TestProberStopsWithTheManager(t *testing.T) {
	p := newProber(1, 1, clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = p.Start(ctx); close(stopped) }()
	started, cancelled := make(chan struct{}), make(chan struct{})
	p.submit(key("ns", "hung"), "v", func(ctx context.Context) any {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil
	}, func(context.Context) { t.Error("a probe ended by the manager's stop must not notify") })
	var ran atomic.Bool
	p.submit(key("ns", "queued"), "v", func(context.Context) any { ran.Store(true); return nil }, func(context.Context) {})
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

// TestPanickingProbeIsContained checks that a probe that panics (a parser
// meeting an answer it did not expect) neither crashes the manager nor
// leaves the object in progress: its condition reads Unknown, ProbeFailed.
func TestPanickingProbeIsContained(t *testing.T) {
	backend := &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", Generation: 1}}
	r := newReconciler(nil, nil, nil, []Option{withClock(clocktesting.NewFakePassiveClock(time.Unix(1000, 0)))})
	ctx := t.Context()
	go func() { _ = r.probes.Start(ctx) }()

	task := probeTask{kind: backendsv1alpha1.HttpBackendKind, obj: backend, inputs: "v1", interval: time.Minute, condition: backendsv1alpha1.StateReachableCondition}
	if step := r.probeStep(ctx, task); !step.submit {
		t.Fatalf("probeStep() = %+v, want a probe submitted", step)
	}
	r.submitProbe(task, func(context.Context) any { panic("index out of range") })
	select {
	case <-r.wake:
	case <-time.After(10 * time.Second):
		t.Fatal("the panicking probe never ended")
	}
	step := r.probeStep(ctx, task)
	if step.result != nil || step.ack == nil || step.requeueAfter == 0 {
		t.Fatalf("probeStep() = %+v, want nothing to apply, the panic acknowledged and the next probe scheduled", step)
	}
	c := meta.FindStatusCondition(backend.Status.Conditions, backendsv1alpha1.StateReachableCondition)
	if c == nil || c.Status != metav1.ConditionUnknown || c.Reason != backendsv1alpha1.ProbeFailedReason || strings.Contains(c.Message, "index out of range") {
		t.Errorf("StateReachable = %+v, want Unknown, ProbeFailed, without the panic's text", c)
	}
}

// TestProberAwait checks the wait of a reconcile for the probe it
// submitted: a probe that ends within the grace is handed to the waiter,
// without the notification that would reconcile the object again; one
// that does not is left to run and notifies when it ends; and there is
// nothing to wait for without a probe of those inputs.
func TestProberAwait(t *testing.T) {
	const long = 10 * time.Second
	const short = 20 * time.Millisecond
	k := key("ns", "obj")

	t.Run("ends within the grace: handed to the waiter, no notification", func(t *testing.T) {
		h := newProbeHarness(t, 2, 2)
		h.submit("ns", "obj", "v1")
		h.waitStarted("ns/obj")
		h.mu.Lock()
		release := h.release["ns/obj"]
		h.mu.Unlock()
		go func() { release <- "learned" }()
		if !h.p.await(t.Context(), k, "v1", long) {
			t.Fatal("await() = false, want the probe to end within the grace")
		}
		if res, _ := h.p.poll(k, "v1"); res == nil || res.value != "learned" {
			t.Errorf("poll() after await = %v, want the result", res)
		}
		h.settle()
		select {
		case id := <-h.notified:
			t.Errorf("%s was notified, although its waiter took the result", id)
		default:
		}
	})

	t.Run("outlasts the grace: left to run, and notifies when it ends", func(t *testing.T) {
		h := newProbeHarness(t, 2, 2)
		h.submit("ns", "obj", "v1")
		h.waitStarted("ns/obj")
		if h.p.await(t.Context(), k, "v1", short) {
			t.Fatal("await() = true, want false: the probe is still running")
		}
		h.finish("ns", "obj", "late") // fails unless notified
	})

	t.Run("nothing to wait for", func(t *testing.T) {
		h := newProbeHarness(t, 2, 2)
		if h.p.await(t.Context(), k, "v1", long) {
			t.Error("await() without a probe = true")
		}
		h.submit("ns", "obj", "v1")
		if h.p.await(t.Context(), k, "v2", long) {
			t.Error("await() of other inputs = true")
		}
	})
}

// TestAdvanceProbeIntervalAfter checks that a task whose next probe
// depends on what the last one learned is scheduled with the interval it
// has once the result is written, not with the one it had before: a lock
// taken is checked an interval later, not retried two seconds later.
func TestAdvanceProbeIntervalAfter(t *testing.T) {
	backend := &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", Generation: 1}}
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	for name, tc := range map[string]struct {
		intervalAfter func() time.Duration
		// min and max bound the wait until the next probe (with jitter).
		min, max time.Duration
	}{
		"without intervalAfter: the interval before": {min: 2 * time.Second, max: 2200 * time.Millisecond},
		"with intervalAfter: the interval after":     {intervalAfter: func() time.Duration { return time.Hour }, min: time.Hour, max: 66 * time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			r := newReconciler(nil, nil, nil, []Option{withClock(clk)})
			ctx := t.Context()
			go func() { _ = r.probes.Start(ctx) }()
			task := probeTask{kind: backendsv1alpha1.HttpBackendKind, obj: backend, inputs: "v1", interval: 2 * time.Second,
				condition: backendsv1alpha1.StateReachableCondition, intervalAfter: tc.intervalAfter}
			apply := func(*probeResult) error { return nil }
			start := func() (probeFunc, error) { return func(context.Context) any { return "learned" }, nil }
			if step, err := r.advanceProbe(ctx, task, apply, start); err != nil || !step.pending {
				t.Fatalf("advanceProbe() = %+v, %v; want a probe submitted", step, err)
			}
			select {
			case <-r.wake:
			case <-time.After(10 * time.Second):
				t.Fatal("the probe never ended")
			}
			step, err := r.advanceProbe(ctx, task, apply, start)
			if err != nil || step.ack == nil {
				t.Fatalf("advanceProbe() = %+v, %v; want the result written", step, err)
			}
			if step.requeueAfter < tc.min || step.requeueAfter > tc.max {
				t.Errorf("next probe in %s, want between %s and %s", step.requeueAfter, tc.min, tc.max)
			}
			if due, wait := r.schedule.due(client.ObjectKeyFromObject(backend), "v1", clk.Now()); due || wait != step.requeueAfter {
				t.Errorf("schedule: due %v in %s, want not due, in %s", due, wait, step.requeueAfter)
			}
		})
	}
}
