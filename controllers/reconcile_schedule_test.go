package controllers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/statefile"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// TestReconcileProbeSchedule checks when an HttpBackend is probed: once
// per interval (plus up to 10% of jitter), at once for a new generation,
// never with probing disabled, and, after a restart, not at once when the
// status already holds a probe of the generation.
func TestReconcileProbeSchedule(t *testing.T) {
	const every = time.Minute
	// due is how far the clock must move for a probe that just ended to be
	// due again, whatever its jitter.
	const due = every * 11 / 10
	probed := requeueWithin(every, due)
	backend := func(opts ...func(*builders.HttpBackendWrapper)) client.Object {
		return newWebBackend(append([]func(*builders.HttpBackendWrapper){func(b *builders.HttpBackendWrapper) { b.ProbeInterval(every) }}, opts...)...)
	}
	step := func(d time.Duration) func(e *reconcileEnv) { return func(e *reconcileEnv) { e.clock.Step(d) } }
	disabled := []metav1.Condition{
		wantCond("Ready", metav1.ConditionTrue, "Succeeded"),
		wantCond("StateReachable", metav1.ConditionUnknown, "ProbeDisabled"),
		unchecked,
	}

	cases := map[string]reconcileCase{
		"no probe before the interval, one after it": {
			objects: []client.Object{backend(), passwordSecret()},
			target:  webBackend,
			script: stateScript{fetch: []fetchAnswer{
				{summary: &stateclient.StateSummary{Present: true, SizeBytes: 180, Summary: statefile.Summary{Serial: 3, Lineage: "l-1"}}},
				{summary: &stateclient.StateSummary{Present: true, SizeBytes: 190, Summary: statefile.Summary{Serial: 4, Lineage: "l-1"}}},
			}},
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantRequeue:    probed,
				wantConditions: reachable,
				wantCalls:      []string{"FetchSummary"},
			}, {
				name:           "half the interval later",
				before:         step(every / 2),
				wantRequeue:    requeueWithin(every/2, due-every/2),
				wantConditions: reachable,
			}, {
				name:           "the interval and its jitter later",
				before:         step(due - every/2),
				do:             reconcileUntilProbed,
				wantRequeue:    probed,
				wantConditions: reachable,
				wantCalls:      []string{"FetchSummary"},
				check: func(t *testing.T, e *reconcileEnv) {
					if s := e.httpBackend("web").Status.State; s == nil || s.Serial != 4 || s.SizeBytes != 190 {
						t.Errorf("status.state = %+v, want serial 4 of the second probe", s)
					}
				},
			}},
		},
		"a new generation is probed at once": {
			objects: []client.Object{backend(), passwordSecret()},
			target:  webBackend,
			steps: []reconcileStep{{
				do:        reconcileUntilProbed,
				wantCalls: []string{"FetchSummary"},
			}, {
				before: func(e *reconcileEnv) {
					e.updateSpec(webBackend, func(obj client.Object) {
						obj.(*backendsv1alpha1.HttpBackend).Spec.Username = "other-runner"
					})
				},
				// The last generation's probe stays until this one's ends.
				wantConditions: withConditions(webProgressing, wantCond("StateReachable", metav1.ConditionTrue, "Reachable")),
				wantCalls:      []string{"FetchSummary"},
			}, {
				do:             awaitProbeAndReconcile,
				wantRequeue:    probed,
				wantConditions: reachable,
			}},
		},
		"rotated credentials are probed at once": {
			objects: []client.Object{backend(), passwordSecret()},
			target:  webBackend,
			steps: []reconcileStep{{
				do:        reconcileUntilProbed,
				wantCalls: []string{"FetchSummary"},
			}, {
				before: func(e *reconcileEnv) {
					s := passwordSecret()
					e.update(s, func() { s.Data["password"] = []byte("rotated-Pa55word") })
				},
				do:             reconcileUntilProbed,
				wantRequeue:    probed,
				wantConditions: reachable,
				wantCalls:      []string{"FetchSummary"},
			}},
		},
		"a failing server is probed again at the interval, not at once": {
			objects: []client.Object{backend(), passwordSecret()},
			target:  webBackend,
			script: stateScript{fetch: []fetchAnswer{
				{err: &stateclient.StatusError{Method: "GET", URL: harnessAddress, StatusCode: 401}},
				{},
			}},
			steps: []reconcileStep{{
				do:          reconcileUntilProbed,
				wantRequeue: probed,
				wantConditions: []metav1.Condition{
					wantCond("Ready", metav1.ConditionFalse, "Unauthorized"),
					wantCond("StateReachable", metav1.ConditionFalse, "Unauthorized"),
					unchecked,
				},
				wantEvents: []recordedEvent{{Object: "web", Type: corev1.EventTypeWarning, Reason: "Unauthorized", Action: "Reconcile"}},
				wantCalls:  []string{"FetchSummary"},
			}, {
				name:        "a watch event meanwhile",
				wantRequeue: probed,
			}, {
				before:         step(due),
				do:             reconcileUntilProbed,
				wantConditions: reachable,
				wantEvents:     []recordedEvent{succeeded}, // a recovery
				wantCalls:      []string{"FetchSummary"},
			}},
		},
		"an interval of 0s disables probing": {
			objects: []client.Object{newWebBackend(func(b *builders.HttpBackendWrapper) { b.ProbeInterval(0) }), passwordSecret()},
			target:  webBackend,
			steps: []reconcileStep{{
				wantRequeue:    noRequeue,
				wantConditions: disabled,
			}, {
				name:           "an hour later",
				before:         step(time.Hour),
				wantRequeue:    noRequeue,
				wantConditions: disabled,
			}},
		},
		"disabling probing forgets the last probe": {
			objects: []client.Object{backend(), passwordSecret()},
			target:  webBackend,
			script: stateScript{fetch: []fetchAnswer{
				{summary: &stateclient.StateSummary{Present: true, Summary: statefile.Summary{Serial: 3}}},
			}},
			steps: []reconcileStep{{
				do:        reconcileUntilProbed,
				wantCalls: []string{"FetchSummary"},
			}, {
				before: func(e *reconcileEnv) {
					e.updateSpec(webBackend, func(obj client.Object) {
						obj.(*backendsv1alpha1.HttpBackend).Spec.Probe.Interval = &metav1.Duration{}
					})
				},
				wantRequeue:    noRequeue,
				wantConditions: disabled,
				check: func(t *testing.T, e *reconcileEnv) {
					if s := e.httpBackend("web").Status.State; s != nil {
						t.Errorf("status.state = %+v, want nil with probing disabled", s)
					}
				},
			}},
		},
		"after a restart a probe of this generation is not repeated at once": {
			objects: []client.Object{backend(), passwordSecret()},
			target:  webBackend,
			steps: []reconcileStep{{
				do:        reconcileUntilProbed,
				wantCalls: []string{"FetchSummary"},
			}, {
				name: "restarted",
				do:   restartAndReconcile,
				// Seeded at a random point of the interval.
				wantRequeue:    requeueWithin(time.Nanosecond, every),
				wantConditions: reachable,
			}, {
				name:           "an interval later",
				before:         step(every),
				do:             reconcileUntilProbed,
				wantRequeue:    probed,
				wantConditions: reachable,
				wantCalls:      []string{"FetchSummary"},
			}},
		},
		"after a restart a probe of an older generation is repeated at once": {
			objects: []client.Object{func() client.Object {
				b := backend().(*backendsv1alpha1.HttpBackend)
				b.Generation, b.Status.ObservedGeneration = 2, 1
				b.Status.Conditions = []metav1.Condition{
					{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Succeeded", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(harnessEpoch)},
					{Type: "StateReachable", Status: metav1.ConditionTrue, Reason: "Reachable", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(harnessEpoch)},
				}
				return b
			}(), passwordSecret()},
			target: webBackend,
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantRequeue:    probed,
				wantConditions: reachable,
				wantCalls:      []string{"FetchSummary"},
				// Ready went through Unknown (Progressing) back to True.
			}},
		},
	}
	runReconcileCases(t, cases)
}
