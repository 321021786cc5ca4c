package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
)

// probeTask describes the probe of one object for probeStep.
type probeTask struct {
	// kind of the object, which keys it in the prober.
	kind string
	// obj is the object being reconciled.
	obj client.Object
	// inputs fingerprints everything the probe reads: new inputs make a
	// probe due at once.
	inputs string
	// interval between probes; 0 probes only on new inputs.
	interval time.Duration
	// intervalAfter, when set, is the interval once a result is written:
	// for an object whose next probe depends on what the last one learned
	// (a StateLock that took its lock checks it, rather than retrying).
	intervalAfter func() time.Duration
	// condition is the condition the probe sets (StateReachable,
	// BucketReady, OutputsReady).
	condition string
	// reserve is the most the probe may hold while it runs, reserved
	// from its namespace's read memory share; 0 is probeReservation.
	reserve int64
}

// probeReservation is what a probe that reads no outputs reserves: a
// state streamed for its summary, a lock's answer. (An encrypted state,
// held whole while it is decrypted, is bounded by the decryption slots.)
const probeReservation = 64 << 10

// probeDecision is what a reconcile does about a probe.
type probeDecision struct {
	// result is a finished probe to write to status.
	result *probes.Result
	// ack is the finished probe to acknowledge once the status is written:
	// result, or one probeStep wrote itself (a probe that panicked).
	ack *probes.Result
	// submit is true when a probe is due and must be submitted.
	submit bool
	// pending is true while a probe is queued or running.
	pending bool
	// requeueAfter is the wait until the next probe is due.
	requeueAfter time.Duration
}

// probeStep decides what this reconcile does about t's probe: write a
// finished result (and schedule the next probe from when it ended), wait
// for one under way, wait until one is due, or submit one.
//
// A result the status could not take (its write failed) is kept for the
// next reconcile, but not past the interval: a newer read is due by then.
// A probe that panicked sets its condition to Unknown (ProbeFailed).
//
// After a restart the schedule is empty. An object whose status already
// holds a probe of its generation is then scheduled at a random point of
// its interval rather than probed at once, so that a manager restarting
// with thousands of backends spreads their probes instead of firing them
// all together.
func (r *reconciler) probeStep(ctx context.Context, t probeTask) probeDecision {
	key := probes.Key{Kind: t.kind, NamespacedName: client.ObjectKeyFromObject(t.obj)}
	now := r.opts.clock.Now()
	res, pending := r.probes.Poll(key, t.inputs)
	switch {
	case res != nil && t.interval > 0 && now.Sub(res.Finished) > t.interval:
		r.probes.Ack(key, res) // too old to write: probe again
	case res != nil:
		next := r.schedule.Probed(key.NamespacedName, t.inputs, res.Finished, t.interval)
		if p, panicked := res.Value.(probes.Panic); panicked {
			ctrl.LoggerFrom(ctx).Error(fmt.Errorf("probe panicked: %v", p.Value), "Probe failed on an internal error", "stack", string(p.Stack))
			obj := t.obj.(statusObject)
			conditions.Set(obj.StatusConditions(), obj.GetGeneration(), t.condition, probeFailed())
			return probeDecision{ack: res, requeueAfter: next}
		}
		return probeDecision{result: res, ack: res, requeueAfter: next}
	case pending:
		return probeDecision{pending: true}
	}
	obj := t.obj.(statusObject)
	if cond := meta.FindStatusCondition(*obj.StatusConditions(), t.condition); cond != nil && cond.ObservedGeneration == obj.GetGeneration() {
		// The status holds a probe of this generation: after a restart,
		// the next one can wait.
		r.schedule.Seed(key.NamespacedName, t.inputs, now, t.interval)
	}
	if due, wait := r.schedule.Due(key.NamespacedName, t.inputs, now); !due {
		return probeDecision{requeueAfter: wait}
	}
	return probeDecision{submit: true}
}

// advanceProbe takes t's probe one step (see probeStep): it writes a
// finished result with apply, or builds a due probe with start and
// submits it. The decision says when to come back, whether a probe is
// under way, and which result to acknowledge once the status is written:
// a result apply could not write is not, so the next attempt writes it.
func (r *reconciler) advanceProbe(ctx context.Context, t probeTask, apply func(*probes.Result) error, start func() (probes.Func, error)) (probeDecision, error) {
	step := r.probeStep(ctx, t)
	switch {
	case step.result != nil:
		if err := apply(step.result); err != nil {
			step.ack = nil
			return step, err
		}
		if t.intervalAfter != nil {
			step.requeueAfter = r.schedule.Probed(client.ObjectKeyFromObject(t.obj), t.inputs, step.result.Finished, t.intervalAfter())
		}
	case step.submit:
		run, err := start()
		if err != nil {
			return step, err
		}
		step.pending = true
		// The probe outlives this reconcile and runs under the manager's
		// context (see prober); one that ends within the grace is written
		// by this reconcile.
		if r.submitProbe(ctx, t, run, r.probeGrace(t)) {
			return r.advanceProbe(ctx, t, apply, start) // writes the result it finds
		}
	}
	return step, nil
}

// probeGrace is how long a reconcile waits for the probe it submitted for
// t: the manager's probe grace for the first probe of a generation, whose
// result decides Ready, 0 for the others. A fast probe then ends within
// the reconcile that submitted it, which writes its result in the same
// status patch: a new backend costs one status write and one reconcile
// instead of two. A slow one is left to run, as any probe; the wait is
// bounded, and only a spec change (or a new object) costs one.
func (r *reconciler) probeGrace(t probeTask) time.Duration {
	obj, ok := t.obj.(statusObject)
	if !ok || r.opts.probeGrace <= 0 {
		return 0
	}
	if cond := meta.FindStatusCondition(*obj.StatusConditions(), t.condition); cond != nil && cond.ObservedGeneration == obj.GetGeneration() {
		return 0
	}
	return r.opts.probeGrace
}

// submitProbe hands run to the prober and waits up to grace for it to
// end, reporting whether it did: its result is then the caller's to
// write. Otherwise, when it ends, the object is reconciled again to write
// its result.
func (r *reconciler) submitProbe(ctx context.Context, t probeTask, run probes.Func, grace time.Duration) bool {
	key := probes.Key{Kind: t.kind, NamespacedName: client.ObjectKeyFromObject(t.obj)}
	reserve := t.reserve
	if reserve == 0 {
		reserve = probeReservation
	}
	notify := func(ctx context.Context) {
		wake := ctrlevent.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: key.Name,
		}}}
		select {
		case r.wake <- wake:
		case <-ctx.Done():
		}
	}
	if grace <= 0 {
		r.probes.Submit(key, t.inputs, reserve, run, notify)
		return false
	}
	return r.probes.SubmitAndAwait(ctx, key, t.inputs, reserve, run, notify, grace)
}
