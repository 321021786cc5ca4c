package controllers

import (
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// The RemoteState of the cases reads HttpBackend "web" and publishes to
// "network-outputs".
var networkState = objectRef{backendsv1alpha1.RemoteStateKind, "network"}

const networkOutputs = "network-outputs"

// newNetworkState is the RemoteState "network" reading HttpBackend "web",
// changed by mutate.
func newNetworkState(mutate ...func(*builders.RemoteStateWrapper)) *backendsv1alpha1.RemoteState {
	rs := builders.MakeRemoteState(networkState.name, harnessNamespace, backendsv1alpha1.HttpBackendKind, webBackend.name)
	for _, m := range mutate {
		m(rs)
	}
	return stored(rs.Obj())
}

// expectPublished checks the ConfigMap and the Secret of RemoteState
// "network": controlled by it and holding the outputs of stackOutputs.
func expectPublished(t *testing.T, e *reconcileEnv) {
	t.Helper()
	cm, secret := e.configMap(networkOutputs), e.secret(networkOutputs)
	if cm == nil || secret == nil {
		t.Fatalf("published ConfigMap = %v, Secret = %v; want both", cm, secret)
	}
	wantPlain := map[string]string{"vpc_id": "vpc-0a1b", "azs": "3", "subnets": `["10.0.1.0/24","10.0.2.0/24"]`, "tags": `{"team":"platform"}`}
	if diff := cmp.Diff(wantPlain, cm.Data); diff != "" {
		t.Errorf("ConfigMap data (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]byte{"db_password": []byte("p@ss-w0rd-XYZ")}, secret.Data); diff != "" {
		t.Errorf("Secret data (-want +got):\n%s", diff)
	}
	for _, obj := range []client.Object{cm, secret} {
		want := []metav1.OwnerReference{{APIVersion: backendsv1alpha1.GroupVersion.String(), Kind: backendsv1alpha1.RemoteStateKind,
			Name: networkState.name, UID: "uid-network", Controller: new(true), BlockOwnerDeletion: new(true)}}
		if diff := cmp.Diff(want, obj.GetOwnerReferences()); diff != "" {
			t.Errorf("owner references of %s (-want +got):\n%s", obj.GetName(), diff)
		}
	}
}

// TestReconcileRemoteState checks a RemoteState reading an HttpBackend:
// the state comes from the backend's state client (StreamState), with the
// backend's address and password; its outputs are published, a failed
// read keeps the last ones, and a missing or broken backend stalls.
func TestReconcileRemoteState(t *testing.T) {
	state := v4State(5, stackOutputs)
	published := []metav1.Condition{
		wantCond("OutputsReady", metav1.ConditionTrue, "OutputsPublished"),
		wantCond("Ready", metav1.ConditionTrue, "Succeeded"),
	}
	notReady := func(reason string) []metav1.Condition {
		return []metav1.Condition{
			wantCond("OutputsReady", metav1.ConditionFalse, reason),
			wantCond("Ready", metav1.ConditionFalse, reason),
		}
	}
	stalled := func(reason string) []metav1.Condition {
		return []metav1.Condition{
			wantCond("Ready", metav1.ConditionFalse, reason),
			wantCond("Stalled", metav1.ConditionTrue, reason),
		}
	}
	event := func(eventType, reason string) recordedEvent {
		return recordedEvent{Object: networkState.name, Type: eventType, Reason: reason, Action: "Reconcile"}
	}
	nextRead := func(e *reconcileEnv) { e.clock.Step(DefaultProbeInterval * 11 / 10) }
	// kept holds the published ConfigMap of a step, for a later one.
	var kept *corev1.ConfigMap

	cases := map[string]reconcileCase{
		"publishes the outputs of the backend's state": {
			objects: []client.Object{newWebBackend(), passwordSecret(), newNetworkState()},
			script:  stateScript{stream: []streamAnswer{{state: state}}},
			target:  networkState,
			steps: []reconcileStep{{
				name:           "the read is submitted",
				wantRequeue:    noRequeue,
				wantConditions: progressing,
				wantCalls:      []string{"StreamState"},
				check: func(t *testing.T, e *reconcileEnv) {
					if got := e.state.configs; len(got) != 1 || got[0].Address != harnessAddress || got[0].Password != harnessPassword || got[0].Username != "runner" {
						t.Errorf("state clients built = %d, want one with the backend's address and credentials", len(got))
					}
				},
			}, {
				name:           "its end publishes",
				do:             awaitProbeAndReconcile,
				wantRequeue:    requeueWithin(DefaultProbeInterval, DefaultProbeInterval*11/10),
				wantConditions: published,
				check: func(t *testing.T, e *reconcileEnv) {
					expectPublished(t, e)
					rs := e.object(networkState).(*backendsv1alpha1.RemoteState)
					if s := rs.Status.State; s == nil || s.Serial != 5 || s.Lineage != "lineage-1" || s.SizeBytes != int64(len(state)) || s.OutputCount != 5 {
						t.Errorf("status.state = %+v, want serial 5, lineage-1, %d bytes, 5 outputs", s, len(state))
					}
					want := []backendsv1alpha1.OutputStatus{
						{Name: "azs", Key: "azs", Type: `"number"`},
						{Name: "db_password", Key: "db_password", Type: `"string"`, Sensitive: true},
						{Name: "subnets", Key: "subnets", Type: `["list","string"]`},
						{Name: "tags", Key: "tags", Type: `["map","string"]`},
						{Name: "vpc_id", Key: "vpc_id", Type: `"string"`},
					}
					if diff := cmp.Diff(want, rs.Status.Outputs); diff != "" {
						t.Errorf("status.outputs (-want +got):\n%s", diff)
					}
				},
			}},
		},
		"a backend holding no state": {
			objects: []client.Object{newWebBackend(), passwordSecret(), newNetworkState()},
			script:  stateScript{stream: []streamAnswer{{}}},
			target:  networkState,
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: notReady("StateNotFound"),
				wantEvents:     []recordedEvent{event(corev1.EventTypeWarning, "StateNotFound")},
				wantCalls:      []string{"StreamState"},
				check: func(t *testing.T, e *reconcileEnv) {
					if cm := e.configMap(networkOutputs); cm != nil {
						t.Errorf("published a ConfigMap with no state")
					}
				},
			}},
		},
		"a selected output the state lacks": {
			objects: []client.Object{newWebBackend(), passwordSecret(), newNetworkState(func(rs *builders.RemoteStateWrapper) {
				rs.Outputs(backendsv1alpha1.OutputSelector{Name: "cluster_endpoint"})
			})},
			script: stateScript{stream: []streamAnswer{{state: state}}},
			target: networkState,
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: notReady("OutputMissing"),
				wantEvents:     []recordedEvent{event(corev1.EventTypeWarning, "OutputMissing")},
				wantCalls:      []string{"StreamState"},
			}},
		},
		"a failed read keeps the last published outputs": {
			objects: []client.Object{newWebBackend(), passwordSecret(), newNetworkState()},
			script: stateScript{stream: []streamAnswer{
				{state: state},
				{err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}},
			}},
			target: networkState,
			steps: []reconcileStep{{
				do:        reconcileUntilProbed,
				wantCalls: []string{"StreamState"},
				check:     func(_ *testing.T, e *reconcileEnv) { kept = e.configMap(networkOutputs) },
			}, {
				before:         nextRead,
				do:             reconcileUntilProbed,
				wantConditions: notReady("Unreachable"),
				wantEvents:     []recordedEvent{event(corev1.EventTypeWarning, "Unreachable")},
				wantCalls:      []string{"StreamState"},
				check: func(t *testing.T, e *reconcileEnv) {
					expectPublished(t, e)
					if cm := e.configMap(networkOutputs); cm.ResourceVersion != kept.ResourceVersion {
						t.Errorf("the published ConfigMap was written again after a failed read")
					}
					if rs := e.object(networkState).(*backendsv1alpha1.RemoteState); len(rs.Status.Outputs) != 5 || rs.Status.State.Serial != 5 {
						t.Errorf("status.outputs = %v, status.state = %+v; want those of the last read", rs.Status.Outputs, rs.Status.State)
					}
				},
			}},
		},
		"outputs the namespace's API storage share cannot hold keep the last published ones, and the read is done with": {
			objects: []client.Object{newWebBackend(), passwordSecret(), newNetworkState()},
			script: stateScript{stream: []streamAnswer{
				{state: state},
				{state: v4State(6, stackOutputs+`,"blob":{"value":"`+strings.Repeat("x", 1000)+`","type":"string"}`)},
			}},
			options: []Option{WithBudgets(budgetsWith(func(b *Budgets) { b.APIStoragePerNamespace = 600; b.APIStorageTotal = 600 }))},
			target:  networkState,
			steps: []reconcileStep{{
				do:        reconcileUntilProbed,
				wantCalls: []string{"StreamState"},
				check:     func(_ *testing.T, e *reconcileEnv) { kept = e.configMap(networkOutputs) },
			}, {
				before:         nextRead,
				do:             reconcileUntilProbed,
				wantRequeue:    requeueWithin(DefaultProbeInterval, DefaultProbeInterval*11/10),
				wantConditions: notReady("BudgetExceeded"),
				wantEvents:     []recordedEvent{event(corev1.EventTypeWarning, "BudgetExceeded")},
				wantCalls:      []string{"StreamState"},
				check: func(t *testing.T, e *reconcileEnv) {
					expectPublished(t, e)
					if cm := e.configMap(networkOutputs); cm.ResourceVersion != kept.ResourceVersion {
						t.Errorf("the published ConfigMap was written although its new outputs do not fit")
					}
					rs := e.object(networkState).(*backendsv1alpha1.RemoteState)
					if len(rs.Status.Outputs) != 5 || rs.Status.State.Serial != 5 {
						t.Errorf("status.outputs = %v, status.state = %+v; want those of the last publication", rs.Status.Outputs, rs.Status.State)
					}
					msg := findCondition(rs.Status.Conditions, "OutputsReady").Message
					for _, part := range []string{"namespace " + harnessNamespace + " has used its API storage share", "of 600 bytes (--api-storage-per-namespace)", "spec.outputs"} {
						if !strings.Contains(msg, part) {
							t.Errorf("OutputsReady says %q, want it to say %q", msg, part)
						}
					}
				},
			}, {
				name:           "nothing is retried before the next read",
				wantConditions: notReady("BudgetExceeded"),
			}},
		},
		"a new backend generation is read at once": {
			objects: []client.Object{newWebBackend(), passwordSecret(), newNetworkState()},
			script:  stateScript{stream: []streamAnswer{{state: state}}},
			target:  networkState,
			steps: []reconcileStep{{
				do:        reconcileUntilProbed,
				wantCalls: []string{"StreamState"},
			}, {
				before: func(e *reconcileEnv) {
					e.updateSpec(webBackend, func(obj client.Object) {
						obj.(*backendsv1alpha1.HttpBackend).Spec.Address = harnessAddress + "-moved"
					})
				},
				do:             reconcileUntilProbed,
				wantConditions: published,
				wantCalls:      []string{"StreamState"},
				check: func(t *testing.T, e *reconcileEnv) {
					if got := e.state.configs[len(e.state.configs)-1].Address; got != harnessAddress+"-moved" {
						t.Errorf("the read used %s, want the backend's new address", got)
					}
				},
			}},
		},
		"a missing backend stalls until it is created": {
			objects: []client.Object{passwordSecret(), newNetworkState()},
			script:  stateScript{stream: []streamAnswer{{state: state}}},
			target:  networkState,
			steps: []reconcileStep{{
				wantRequeue:    noRequeue,
				wantConditions: stalled("BackendNotFound"),
				wantEvents:     []recordedEvent{event(corev1.EventTypeWarning, "BackendNotFound")},
			}, {
				before:         func(e *reconcileEnv) { e.create(newWebBackend()) },
				do:             reconcileUntilProbed,
				wantConditions: published,
				wantCalls:      []string{"StreamState"},
				check:          expectPublished,
			}},
		},
		"a backend whose password Secret is missing stalls": {
			objects: []client.Object{newWebBackend(), newNetworkState()},
			target:  networkState,
			steps: []reconcileStep{{
				wantRequeue:    noRequeue,
				wantConditions: stalled("BackendNotReady"),
				wantEvents:     []recordedEvent{event(corev1.EventTypeWarning, "BackendNotReady")},
			}, {
				name: "an hour later, still nothing read",
				before: func(e *reconcileEnv) {
					e.clock.Step(time.Hour)
				},
				wantRequeue:    noRequeue,
				wantConditions: stalled("BackendNotReady"),
			}},
		},
	}
	runReconcileCases(t, cases)
}
