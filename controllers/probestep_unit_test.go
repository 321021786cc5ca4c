package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// TestPanickingProbeIsContained checks that a probe that panics (a parser
// meeting an answer it did not expect) neither crashes the manager nor
// leaves the object in progress: its condition reads Unknown, ProbeFailed.
func TestPanickingProbeIsContained(t *testing.T) {
	backend := builders.MakeHttpBackend("b", "ns", "").Generation(1).Obj()
	r := newReconciler(nil, nil, nil, []Option{withClock(clocktesting.NewFakePassiveClock(time.Unix(1000, 0)))})
	ctx := t.Context()
	go func() { _ = r.probes.Start(ctx) }()

	task := probeTask{kind: backendsv1alpha1.HttpBackendKind, obj: backend, inputs: "v1", interval: time.Minute, condition: backendsv1alpha1.StateReachableCondition}
	if step := r.probeStep(ctx, task); !step.submit {
		t.Fatalf("probeStep() = %+v, want a probe submitted", step)
	}
	r.submitProbe(t.Context(), task, func(context.Context) any { panic("index out of range") }, 0)
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

// TestAdvanceProbeIntervalAfter checks that a task whose next probe
// depends on what the last one learned is scheduled with the interval it
// has once the result is written, not with the one it had before: a lock
// taken is checked an interval later, not retried two seconds later.
func TestAdvanceProbeIntervalAfter(t *testing.T) {
	backend := builders.MakeHttpBackend("b", "ns", "").Generation(1).Obj()
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
			apply := func(*probes.Result) error { return nil }
			start := func() (probes.Func, error) { return func(context.Context) any { return "learned" }, nil }
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
			if due, wait := r.schedule.Due(client.ObjectKeyFromObject(backend), "v1", clk.Now()); due || wait != step.requeueAfter {
				t.Errorf("schedule: due %v in %s, want not due, in %s", due, wait, step.requeueAfter)
			}
		})
	}
}
