package controllers

import (
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/statefile"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// The Reconcile-level cases of the series the alerts read: what the
// reconcilers record in the manager's registry as objects are probed,
// restarted, changed and deleted. Each case starts with no series for its
// object and leaves none behind.

// expectSeries checks the series of names of the objects called target's
// name in the harness namespace (other cases of the package leave theirs
// in the manager's registry).
func expectSeries(target objectRef, want map[string]float64, names ...string) func(t *testing.T, e *reconcileEnv) {
	return func(t *testing.T, e *reconcileEnv) {
		t.Helper()
		if diff := cmp.Diff(want, gatherObject(t, registryOf(t, e.metrics), harnessNamespace, target.name, names...)); diff != "" {
			t.Errorf("series (-want +got):\n%s", diff)
		}
	}
}

// forgetSeries drops the series of target, as a new manager process starts
// with none.
func forgetSeries(target objectRef) func(e *reconcileEnv) {
	return func(e *reconcileEnv) {
		if target.kind == backendsv1alpha1.RemoteStateKind {
			e.metrics.remoteStateRefresh.forget(types.NamespacedName{Namespace: harnessNamespace, Name: target.name})
			return
		}
		e.metrics.forgetBackend(target.kind, harnessNamespace, target.name)
	}
}

// deleteObject deletes target from the fake API server.
func deleteObject(target objectRef) func(e *reconcileEnv) {
	return func(e *reconcileEnv) {
		e.t.Helper()
		if err := e.client.Delete(e.ctx, e.object(target)); err != nil {
			e.t.Fatalf("deleting %s %s: %v", target.kind, target.name, err)
		}
	}
}

// TestReconcileBackendMetrics checks infrastate_backend_reachable through
// the backend reconciler: set from each probe, served from the status
// after a restart before any probe, removed when probing is turned off or
// the backend is deleted.
func TestReconcileBackendMetrics(t *testing.T) {
	const every = time.Minute
	backend := func(opts ...func(*builders.HttpBackendWrapper)) client.Object {
		return newWebBackend(append([]func(*builders.HttpBackendWrapper){func(b *builders.HttpBackendWrapper) { b.ProbeInterval(every) }}, opts...)...)
	}
	nextProbe := func(e *reconcileEnv) { e.clock.Step(every * 11 / 10) }
	refused := fetchAnswer{err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	reachableIs := func(v float64) func(t *testing.T, e *reconcileEnv) {
		return expectSeries(webBackend, map[string]float64{reachableMetric + "{kind=HttpBackend,name=web}": v}, reachableMetric)
	}
	none := expectSeries(webBackend, map[string]float64{}, reachableMetric, staleAfterMetric, lockHeldMetric, stateSizeMetric)
	noReachable := expectSeries(webBackend, map[string]float64{}, reachableMetric)
	lockSeries := expectSeries(webBackend, map[string]float64{
		reachableMetric + "{kind=HttpBackend,name=web}":  1,
		staleAfterMetric + "{kind=HttpBackend,name=web}": 1800,
		lockHeldMetric + "{kind=HttpBackend,name=web}":   1,
	}, reachableMetric, staleAfterMetric, lockHeldMetric)

	cases := map[string]reconcileCase{
		"unreachable, then holding no state (reachable), then restarted, then deleted": {
			objects: []client.Object{backend(), passwordSecret()},
			script:  stateScript{fetch: []fetchAnswer{refused, {}}},
			target:  webBackend,
			steps: []reconcileStep{{
				name:       "refused",
				before:     forgetSeries(webBackend),
				do:         reconcileUntilProbed,
				wantCalls:  []string{"FetchSummary"},
				wantEvents: []recordedEvent{{Object: "web", Type: "Warning", Reason: "Unreachable", Action: "Reconcile"}},
				check:      reachableIs(0),
			}, {
				name:       "no state yet (404): reachable",
				before:     nextProbe,
				do:         reconcileUntilProbed,
				wantCalls:  []string{"FetchSummary"},
				wantEvents: []recordedEvent{{Object: "web", Type: "Normal", Reason: "Succeeded", Action: "Reconcile"}},
				check:      reachableIs(1),
			}, {
				name:   "a new manager serves the status' value before its first probe",
				before: forgetSeries(webBackend),
				do:     restartAndReconcile,
				check:  reachableIs(1),
			}, {
				name:   "deleted",
				before: deleteObject(webBackend),
				check:  none,
			}},
		},
		"stalled on a deleted Secret, then back": {
			objects: []client.Object{backend(), passwordSecret()},
			target:  webBackend,
			steps: []reconcileStep{{
				before:    forgetSeries(webBackend),
				do:        reconcileUntilProbed,
				wantCalls: []string{"FetchSummary"},
				check:     reachableIs(1),
			}, {
				name: "the Secret is deleted: not probed, so no series",
				before: func(e *reconcileEnv) {
					if err := e.client.Delete(e.ctx, passwordSecret()); err != nil {
						e.t.Fatal(err)
					}
				},
				wantEvents: []recordedEvent{{Object: "web", Type: "Warning", Reason: "SecretNotFound", Action: "Reconcile"}},
				check:      noReachable,
			}, {
				name:   "a new manager stalls too, and serves none",
				before: forgetSeries(webBackend),
				do:     restartAndReconcile,
				check:  noReachable,
			}, {
				name:   "the Secret is back: the status' value again",
				before: func(e *reconcileEnv) { e.create(passwordSecret()) },
				wantEvents: []recordedEvent{{
					Object: "web", Type: "Normal", Reason: "Succeeded", Action: "Reconcile",
					Note: "Rendered ConfigMap web-backend and Secret web-backend-credentials",
				}},
				check: reachableIs(1),
			}},
		},
		"probing turned off": {
			objects: []client.Object{backend(), passwordSecret()},
			script: stateScript{fetch: []fetchAnswer{{summary: &stateclient.StateSummary{
				Present: true, SizeBytes: 180, Summary: statefile.Summary{Serial: 3, Lineage: "l-1"},
			}}}},
			target: webBackend,
			steps: []reconcileStep{{
				before:    forgetSeries(webBackend),
				do:        reconcileUntilProbed,
				wantCalls: []string{"FetchSummary"},
				check: expectSeries(webBackend, map[string]float64{
					reachableMetric + "{kind=HttpBackend,name=web}": 1,
					stateSizeMetric + "{kind=HttpBackend,name=web}": 180,
				}, reachableMetric, stateSizeMetric),
			}, {
				name: "probe.interval 0s",
				before: func(e *reconcileEnv) {
					e.updateSpec(webBackend, func(obj client.Object) {
						obj.(*backendsv1alpha1.HttpBackend).Spec.Probe.Interval = &metav1.Duration{}
					})
				},
				check: none,
			}},
		},
		"a checked lock under staleAfter": {
			objects: []client.Object{backend(func(b *builders.HttpBackendWrapper) {
				b.Locks().LockCheck().LockPolicy(backendsv1alpha1.LockPolicy{StaleAfter: &metav1.Duration{Duration: 30 * time.Minute}})
			}), passwordSecret()},
			script: stateScript{lock: []error{errHeldByRun}},
			target: webBackend,
			steps: []reconcileStep{{
				before:     forgetSeries(webBackend),
				do:         reconcileUntilProbed,
				wantCalls:  []string{"FetchSummary", "Lock " + webLockID},
				wantEvents: []recordedEvent{{Object: "web", Type: "Warning", Reason: "StaleLock", Action: "Probe"}},
				check:      lockSeries,
			}, {
				name:   "a new manager serves the lock series from the status before its first probe",
				before: forgetSeries(webBackend),
				do:     restartAndReconcile,
				check: allChecks(lockSeries, func(t *testing.T, e *reconcileEnv) {
					t.Helper()
					e.metrics.lockAges.mu.Lock()
					_, ok := e.metrics.lockAges.created[lockAgeKey{backendsv1alpha1.HttpBackendKind, harnessNamespace, webBackend.name}]
					e.metrics.lockAges.mu.Unlock()
					if !ok {
						t.Error("no infrastate_state_lock_age_seconds series for the lock the status names")
					}
				}),
			}, {
				name:   "deleted",
				before: deleteObject(webBackend),
				check:  none,
			}},
		},
	}
	runReconcileCases(t, cases)
}

// TestReconcileRemoteStateMetrics checks the refresh series through the
// RemoteState reconciler: a publication sets the last success, a failed
// read leaves it, a new manager starts from the status, one that never
// read counts from its creation, and a deleted RemoteState has none.
func TestReconcileRemoteStateMetrics(t *testing.T) {
	names := []string{lastSuccessMetric, intervalMetric}
	created := harnessEpoch.Add(-time.Hour)
	remote := func() client.Object {
		return newNetworkState(func(rs *builders.RemoteStateWrapper) { rs.Created(created) })
	}
	nextRead := func(e *reconcileEnv) { e.clock.Step(DefaultProbeInterval * 11 / 10) }
	refused := streamAnswer{err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	refreshedAt := func(at time.Time) func(t *testing.T, e *reconcileEnv) {
		return expectSeries(networkState, map[string]float64{
			lastSuccessMetric + "{name=network}": float64(at.Unix()),
			intervalMetric + "{name=network}":    DefaultProbeInterval.Seconds(),
		}, names...)
	}
	// sinceOutputsReadyChanged wants the last success at the last
	// transition of OutputsReady, which the API server's clock stamps.
	sinceOutputsReadyChanged := func(t *testing.T, e *reconcileEnv) {
		t.Helper()
		cond := meta.FindStatusCondition(*e.object(networkState).StatusConditions(), backendsv1alpha1.OutputsReadyCondition)
		if cond == nil || cond.Status == metav1.ConditionTrue {
			t.Fatalf("OutputsReady = %v, want one that is not True", cond)
		}
		refreshedAt(cond.LastTransitionTime.Time)(t, e)
	}

	cases := map[string]reconcileCase{
		"published, a failed read, restarted, deleted": {
			objects: []client.Object{newWebBackend(), passwordSecret(), remote()},
			script:  stateScript{stream: []streamAnswer{{state: v4State(5, stackOutputs)}, refused}},
			target:  networkState,
			steps: []reconcileStep{{
				name:      "published: the time the read ended",
				before:    forgetSeries(networkState),
				do:        reconcileUntilProbed,
				wantCalls: []string{"StreamState"},
				check:     refreshedAt(harnessEpoch),
			}, {
				name:       "a failed read leaves it",
				before:     nextRead,
				do:         reconcileUntilProbed,
				wantCalls:  []string{"StreamState"},
				wantEvents: []recordedEvent{{Object: networkState.name, Type: "Warning", Reason: "Unreachable", Action: "Reconcile"}},
				check:      refreshedAt(harnessEpoch),
			}, {
				name:   "a new manager counts from when OutputsReady stopped being True",
				before: forgetSeries(networkState),
				do:     restartAndReconcile,
				check:  sinceOutputsReadyChanged,
			}, {
				name:   "deleted",
				before: deleteObject(networkState),
				check:  expectSeries(networkState, map[string]float64{}, names...),
			}},
		},
		"published, then a new manager an hour later": {
			objects: []client.Object{newWebBackend(), passwordSecret(), remote()},
			script:  stateScript{stream: []streamAnswer{{state: v4State(5, stackOutputs)}}},
			target:  networkState,
			steps: []reconcileStep{{
				before:    forgetSeries(networkState),
				do:        reconcileUntilProbed,
				wantCalls: []string{"StreamState"},
				check:     refreshedAt(harnessEpoch),
			}, {
				name: "OutputsReady is True: its start, not never",
				before: func(e *reconcileEnv) {
					forgetSeries(networkState)(e)
					e.clock.Step(time.Hour)
				},
				do:    restartAndReconcile,
				check: refreshedAt(harnessEpoch.Add(time.Hour)),
			}},
		},
		"stalled before its first read: counted from its creation": {
			objects: []client.Object{passwordSecret(), remote()},
			target:  networkState,
			steps: []reconcileStep{{
				before:     forgetSeries(networkState),
				wantEvents: []recordedEvent{{Object: networkState.name, Type: "Warning", Reason: "BackendNotFound", Action: "Reconcile"}},
				check:      refreshedAt(created),
			}},
		},
	}
	runReconcileCases(t, cases)
}
