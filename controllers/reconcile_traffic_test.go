package controllers

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/owned"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// TestReconcileAPITraffic checks what a backend costs the API server: its
// first reconcile reads its Secret once and writes what it must; a
// periodic probe of an unchanged backend, or a watch event that changes
// nothing, reads and writes nothing; a rotated Secret is read once and
// re-rendered; a restart reads each object once to check it, and writes
// nothing.
func TestReconcileAPITraffic(t *testing.T) {
	const every = time.Minute
	backend := newWebBackend(func(b *builders.HttpBackendWrapper) { b.ProbeInterval(every) })
	newBackend := apiTraffic{
		reads: []string{"get Secret state-password"},
		writes: []string{
			"create Secret " + webSecret, "create ConfigMap " + webConfigMap,
			"patch HttpBackend web status", "patch HttpBackend web status",
		},
	}
	runReconcileCases(t, map[string]reconcileCase{
		"a backend at rest": {
			objects: []client.Object{backend, passwordSecret()},
			target:  webBackend,
			steps: []reconcileStep{{
				name:        "created",
				do:          reconcileUntilProbed,
				wantCalls:   []string{"FetchSummary"},
				wantTraffic: &newBackend,
			}, {
				name:        "a watch event that changes nothing",
				wantTraffic: &apiTraffic{},
			}, {
				name:        "its periodic probes",
				before:      func(e *reconcileEnv) { e.clock.Step(every * 11 / 10) },
				do:          reconcileUntilProbed,
				wantCalls:   []string{"FetchSummary"},
				wantTraffic: &apiTraffic{},
			}, {
				before:      func(e *reconcileEnv) { e.clock.Step(every * 11 / 10) },
				do:          reconcileUntilProbed,
				wantCalls:   []string{"FetchSummary"},
				wantTraffic: &apiTraffic{},
				check: func(t *testing.T, e *reconcileEnv) {
					if n := e.state.closedIdle(); n != 3 {
						t.Errorf("3 probes closed their idle connections %d times, want 3", n)
					}
				},
			}},
		},
		"a new backend whose first probe ends within the probe grace": {
			objects: []client.Object{backend, passwordSecret()},
			options: []Option{withProbeGrace(time.Minute)},
			target:  webBackend,
			steps: []reconcileStep{{
				name:           "one reconcile, one status write",
				wantConditions: reachable,
				wantCalls:      []string{"FetchSummary"},
				wantTraffic: &apiTraffic{
					reads:  []string{"get Secret state-password"},
					writes: []string{"create Secret " + webSecret, "create ConfigMap " + webConfigMap, "patch HttpBackend web status"},
				},
				check: func(t *testing.T, e *reconcileEnv) {
					select {
					case ev := <-e.reconciler(webBackend.kind).base.wake:
						t.Errorf("the probe asked to reconcile %s again, although its reconcile wrote its result", ev.Object.GetName())
					default:
					}
				},
			}, {
				name:        "its periodic probes are not awaited",
				before:      func(e *reconcileEnv) { e.clock.Step(every * 11 / 10) },
				do:          reconcileUntilProbed,
				wantCalls:   []string{"FetchSummary"},
				wantTraffic: &apiTraffic{},
			}},
		},
		"a rotated password": {
			objects: []client.Object{backend, passwordSecret()},
			target:  webBackend,
			steps: []reconcileStep{{
				do:          reconcileUntilProbed,
				wantCalls:   []string{"FetchSummary"},
				wantTraffic: &newBackend,
			}, {
				before: func(e *reconcileEnv) {
					s := passwordSecret()
					e.update(s, func() { s.Data["password"] = []byte("rotated-Pa55word") })
				},
				do:        reconcileUntilProbed,
				wantCalls: []string{"FetchSummary"},
				wantTraffic: &apiTraffic{
					reads:  []string{"get Secret state-password", "get Secret " + webSecret},
					writes: []string{"patch Secret " + webSecret},
				},
			}},
		},
		"a restart": {
			objects: []client.Object{backend, passwordSecret()},
			target:  webBackend,
			steps: []reconcileStep{{
				do:          reconcileUntilProbed,
				wantCalls:   []string{"FetchSummary"},
				wantTraffic: &newBackend,
			}, {
				do: restartAndReconcile,
				wantTraffic: &apiTraffic{reads: []string{
					"get Secret state-password", "get Secret " + webSecret, "get ConfigMap " + webConfigMap,
				}},
			}, {
				name:        "after the restart",
				wantTraffic: &apiTraffic{},
			}},
		},
	})
}

// TestReconcileRenderMemo checks when a reconcile may skip rendering: only
// for the inputs of the last render, and only while both rendered objects
// stand as the operator wrote them.
func TestReconcileRenderMemo(t *testing.T) {
	cases := map[string]struct {
		change     func(e *reconcileEnv)
		otherInput bool
		want       bool
	}{
		"the same inputs, nothing changed": {want: true},
		"other inputs":                     {otherInput: true},
		"the ConfigMap changed by someone": {change: func(e *reconcileEnv) {
			cm := e.configMap(webConfigMap)
			e.update(cm, func() { cm.Labels["team"] = "a" })
		}},
		"the Secret deleted": {change: func(e *reconcileEnv) {
			if err := e.client.Delete(e.ctx, e.secret(webSecret)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newReconcileEnv(t, []client.Object{newWebBackend(), passwordSecret()}, stateScript{}, nil)
			e.reconcileUntilProbed(webBackend)
			base := e.reconciler(webBackend.kind).base
			backend := e.httpBackend(webBackend.name)
			memo, ok := base.renders.Get(owned.WriterKey{Kind: backendsv1alpha1.HttpBackendKind, NamespacedName: client.ObjectKeyFromObject(backend)})
			if !ok {
				t.Fatal("no memo after a render")
			}
			if tc.change != nil {
				tc.change(e)
			}
			inputs := memo.Inputs
			if tc.otherInput {
				inputs += "-other"
			}
			if _, got := base.unchangedRender(e.ctx, backend, backendsv1alpha1.HttpBackendKind, inputs); got != tc.want {
				t.Errorf("unchangedRender() = %t, want %t", got, tc.want)
			}
		})
	}
}
