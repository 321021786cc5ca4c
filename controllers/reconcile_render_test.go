package controllers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/render"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// The HttpBackend of the render and stall cases, and what it renders.
var (
	webBackend = objectRef{backendsv1alpha1.HttpBackendKind, "web"}
)

const (
	webConfigMap = "web-backend"
	webSecret    = "web-backend-credentials"
)

// newWebBackend is the HttpBackend "web", authenticating with the Secret
// "state-password", changed by opts.
func newWebBackend(opts ...func(*builders.HttpBackendWrapper)) *backendsv1alpha1.HttpBackend {
	b := builders.MakeHttpBackend(webBackend.name, harnessNamespace, harnessAddress).BasicAuth("runner", "state-password", "")
	for _, opt := range opts {
		opt(b)
	}
	return stored(b.Obj())
}

// Conditions the cases want again and again.
var (
	progressing = []metav1.Condition{
		wantCond("Ready", metav1.ConditionUnknown, "Progressing"),
		wantCond("Reconciling", metav1.ConditionTrue, "Progressing"),
	}
	// unchecked is the Locked condition of an HttpBackend without a lock
	// check that no StateLock holds.
	unchecked = wantCond("Locked", metav1.ConditionUnknown, "LockNotChecked")
	// webProgressing is progressing, for an HttpBackend without a lock
	// check.
	webProgressing = withConditions(progressing, unchecked)
	// reachable is an HttpBackend without a lock check, Ready.
	reachable = []metav1.Condition{
		wantCond("Ready", metav1.ConditionTrue, "Succeeded"),
		wantCond("StateReachable", metav1.ConditionTrue, "Reachable"),
		unchecked,
	}
	// succeeded is the event of a backend becoming Ready.
	succeeded = recordedEvent{Object: "web", Type: corev1.EventTypeNormal, Reason: "Succeeded", Action: "Reconcile"}
)

// withConditions returns base with more conditions.
func withConditions(base []metav1.Condition, more ...metav1.Condition) []metav1.Condition {
	return append(append([]metav1.Condition(nil), base...), more...)
}

// expectRendered checks the ConfigMap and the Secret of backend "web":
// controlled by it, holding spec's files and the password, and named in
// status.rendered.
func expectRendered(t *testing.T, e *reconcileEnv, configMapName string) {
	t.Helper()
	backend := e.httpBackend(webBackend.name)
	files, err := render.HTTPFiles(backend.Spec)
	if err != nil {
		t.Fatalf("render.HTTPFiles() = %v", err)
	}
	cm, secret := e.configMap(configMapName), e.secret(webSecret)
	if cm == nil || secret == nil {
		t.Fatalf("rendered ConfigMap %s = %v, Secret %s = %v; want both", configMapName, cm, webSecret, secret)
	}
	if diff := cmp.Diff(files.Data(), cm.Data); diff != "" {
		t.Errorf("ConfigMap data (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]byte{render.EnvHTTPPassword: []byte(harnessPassword)}, secret.Data); diff != "" {
		t.Errorf("Secret data (-want +got):\n%s", diff)
	}
	for _, obj := range []client.Object{cm, secret} {
		want := []metav1.OwnerReference{{APIVersion: backendsv1alpha1.GroupVersion.String(), Kind: backendsv1alpha1.HttpBackendKind,
			Name: backend.Name, UID: backend.UID, Controller: new(true), BlockOwnerDeletion: new(true)}}
		if diff := cmp.Diff(want, obj.GetOwnerReferences()); diff != "" {
			t.Errorf("owner references of %s (-want +got):\n%s", obj.GetName(), diff)
		}
	}
	want := &backendsv1alpha1.RenderedObjects{ConfigMapName: configMapName, SecretName: webSecret, CompatibleRunners: everyRunner}
	if diff := cmp.Diff(want, backend.Status.Rendered); diff != "" {
		t.Errorf("status.rendered (-want +got):\n%s", diff)
	}
}

// everyRunner is status.rendered.compatibleRunners of a backend that needs
// nothing of the runner table: every release the operator knows.
var everyRunner = []backendsv1alpha1.CompatibleRunner{
	{Flavor: backendsv1alpha1.RunnerTerraform, Versions: ">= 1.0.0"},
	{Flavor: backendsv1alpha1.RunnerOpenTofu, Versions: ">= 1.6.0"},
}

// TestReconcileHttpBackendRender checks what an HttpBackend renders: the
// ConfigMap and the credentials Secret, controlled by the backend, named
// in status.rendered, Ready once the first probe is written, and rendered
// again when the spec changes.
func TestReconcileHttpBackendRender(t *testing.T) {
	cases := map[string]reconcileCase{
		"renders and is Ready after the first probe": {
			objects: []client.Object{newWebBackend(), passwordSecret()},
			target:  webBackend,
			steps: []reconcileStep{{
				name:           "the first reconcile renders and submits the probe",
				wantRequeue:    noRequeue,
				wantConditions: webProgressing,
				wantCalls:      []string{"FetchSummary"},
				check: func(t *testing.T, e *reconcileEnv) {
					expectRendered(t, e, webConfigMap)
					if got := e.state.configs; len(got) != 1 || got[0].Password != harnessPassword || got[0].Address != harnessAddress {
						t.Errorf("state clients built = %d, want one with the backend's address and password", len(got))
					}
				},
			}, {
				name:           "the probe's end writes its result",
				do:             awaitProbeAndReconcile,
				wantRequeue:    requeueWithin(DefaultProbeInterval, DefaultProbeInterval*11/10),
				wantConditions: reachable,
				check: func(t *testing.T, e *reconcileEnv) {
					b := e.httpBackend(webBackend.name)
					if diff := cmp.Diff(&backendsv1alpha1.StateSummary{Present: false}, b.Status.State); diff != "" {
						t.Errorf("status.state (-want +got):\n%s", diff)
					}
					if b.Status.ObservedGeneration != 1 {
						t.Errorf("observedGeneration = %d, want 1", b.Status.ObservedGeneration)
					}
				},
			}, {
				name:           "a reconcile with nothing new changes nothing",
				wantRequeue:    requeueWithin(DefaultProbeInterval, DefaultProbeInterval*11/10),
				wantConditions: reachable,
			}},
		},
		"a spec change renders again": {
			objects: []client.Object{newWebBackend(), passwordSecret()},
			target:  webBackend,
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: reachable,
				wantCalls:      []string{"FetchSummary"},
			}, {
				name: "a new address",
				before: func(e *reconcileEnv) {
					e.updateSpec(webBackend, func(obj client.Object) {
						obj.(*backendsv1alpha1.HttpBackend).Spec.Address = harnessAddress + "-moved"
					})
				},
				do:             reconcileUntilProbed,
				wantConditions: reachable,
				wantCalls:      []string{"FetchSummary"},
				check: func(t *testing.T, e *reconcileEnv) {
					expectRendered(t, e, webConfigMap)
					if cm := e.configMap(webConfigMap); !strings.Contains(cm.Data[render.BackendTFKey], harnessAddress+"-moved") {
						t.Errorf("backend.tf = %q, want the new address", cm.Data[render.BackendTFKey])
					}
					if got := e.state.configs[len(e.state.configs)-1].Address; got != harnessAddress+"-moved" {
						t.Errorf("the probe read %s, want the new address", got)
					}
				},
			}},
		},
		"a new configMapName deletes the previous ConfigMap": {
			objects: []client.Object{newWebBackend(), passwordSecret()},
			target:  webBackend,
			steps: []reconcileStep{{
				do:        reconcileUntilProbed,
				wantCalls: []string{"FetchSummary"},
			}, {
				before: func(e *reconcileEnv) {
					e.updateSpec(webBackend, func(obj client.Object) {
						obj.(*backendsv1alpha1.HttpBackend).Spec.ConfigMapName = "web-files"
					})
				},
				do:             reconcileUntilProbed,
				wantConditions: reachable,
				wantCalls:      []string{"FetchSummary"},
				check: func(t *testing.T, e *reconcileEnv) {
					expectRendered(t, e, "web-files")
					if cm := e.configMap(webConfigMap); cm != nil {
						t.Errorf("the previous ConfigMap %s is still there", webConfigMap)
					}
				},
			}},
		},
	}
	runReconcileCases(t, cases)
}

// TestReconcileHttpBackendStalls checks that a broken reference stalls
// the backend without rendering anything, that the backend recovers when
// the reference is fixed, and that a reference broken after a good render
// leaves the rendered objects as they were.
func TestReconcileHttpBackendStalls(t *testing.T) {
	stalled := func(reason string) []metav1.Condition {
		return []metav1.Condition{
			wantCond("Ready", metav1.ConditionFalse, reason),
			wantCond("Stalled", metav1.ConditionTrue, reason),
		}
	}
	stallEvent := func(reason string) recordedEvent {
		return recordedEvent{Object: "web", Type: corev1.EventTypeWarning, Reason: reason, Action: "Reconcile"}
	}
	// rendered keeps the rendered objects of a step, for a later one.
	var rendered struct {
		cm     *corev1.ConfigMap
		secret *corev1.Secret
	}
	keepRendered := func(_ *testing.T, e *reconcileEnv) {
		rendered.cm, rendered.secret = e.configMap(webConfigMap), e.secret(webSecret)
	}
	expectUntouched := func(t *testing.T, e *reconcileEnv) {
		t.Helper()
		cm, secret := e.configMap(webConfigMap), e.secret(webSecret)
		if cm == nil || secret == nil {
			t.Fatalf("the rendered ConfigMap (%v) or Secret (%v) is gone", cm, secret)
		}
		if diff := cmp.Diff(rendered.cm.Data, cm.Data); diff != "" || cm.ResourceVersion != rendered.cm.ResourceVersion {
			t.Errorf("the rendered ConfigMap changed (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(rendered.secret.Data, secret.Data); diff != "" || secret.ResourceVersion != rendered.secret.ResourceVersion {
			t.Errorf("the rendered Secret changed (-before +after):\n%s", diff)
		}
		if r := e.httpBackend(webBackend.name).Status.Rendered; r == nil || r.ConfigMapName != webConfigMap {
			t.Errorf("status.rendered = %v, want the previous render", r)
		}
	}
	expectNothingRendered := func(t *testing.T, e *reconcileEnv) {
		t.Helper()
		if cm, secret := e.configMap(webConfigMap), e.secret(webSecret); cm != nil || secret != nil {
			t.Errorf("rendered ConfigMap %v and Secret %v, want nothing rendered", cm != nil, secret != nil)
		}
		if r := e.httpBackend(webBackend.name).Status.Rendered; r != nil {
			t.Errorf("status.rendered = %v, want nil", r)
		}
	}

	cases := map[string]reconcileCase{
		"a missing password Secret stalls until it is created": {
			objects: []client.Object{newWebBackend()},
			target:  webBackend,
			steps: []reconcileStep{{
				name:           "no Secret",
				wantRequeue:    noRequeue,
				wantConditions: stalled("SecretNotFound"),
				wantEvents:     []recordedEvent{stallEvent("SecretNotFound")},
				check:          expectNothingRendered,
			}, {
				name:           "nothing changed: still stalled, no event again",
				wantRequeue:    noRequeue,
				wantConditions: stalled("SecretNotFound"),
			}, {
				name:           "the Secret is created",
				before:         func(e *reconcileEnv) { e.create(passwordSecret()) },
				do:             reconcileUntilProbed,
				wantConditions: reachable,
				wantCalls:      []string{"FetchSummary"},
				check:          func(t *testing.T, e *reconcileEnv) { expectRendered(t, e, webConfigMap) },
			}},
		},
		"a runner that cannot read a setting stalls naming it, and keeps the previous render": {
			objects: []client.Object{newWebBackend(), passwordSecret()},
			target:  webBackend,
			steps: []reconcileStep{{
				name:      "rendered",
				do:        reconcileUntilProbed,
				wantCalls: []string{"FetchSummary"},
				check:     keepRendered,
			}, {
				name: "an override of headers, which Terraform does not know, for a Terraform runner",
				before: func(e *reconcileEnv) {
					e.updateSpec(webBackend, func(obj client.Object) {
						b := obj.(*backendsv1alpha1.HttpBackend)
						b.Spec.Runner = &backendsv1alpha1.Runner{Flavor: backendsv1alpha1.RunnerTerraform, Version: "1.9"}
						b.Spec.Overrides = []backendsv1alpha1.Override{{Path: "headers", Value: apiextensionsv1.JSON{Raw: []byte(`{"X-Stack":"web"}`)}}}
					})
				},
				wantRequeue:    noRequeue,
				wantConditions: withConditions(stalled("UnsupportedByRunner"), wantCond("StateReachable", metav1.ConditionTrue, "Reachable"), unchecked),
				wantEvents:     []recordedEvent{stallEvent("UnsupportedByRunner")},
				check:          allChecks(expectUntouched, expectMessageSaying(webBackend, "Ready", "terraform 1.9", "headers", "opentofu >= 1.7.0")),
			}, {
				name: "the runner is OpenTofu: the headers are rendered",
				before: func(e *reconcileEnv) {
					e.updateSpec(webBackend, func(obj client.Object) {
						obj.(*backendsv1alpha1.HttpBackend).Spec.Runner = &backendsv1alpha1.Runner{Flavor: backendsv1alpha1.RunnerOpenTofu}
					})
				},
				do:             reconcileUntilProbed,
				wantConditions: reachable,
				wantCalls:      []string{"FetchSummary"},
				check: func(t *testing.T, e *reconcileEnv) {
					want := []backendsv1alpha1.CompatibleRunner{{Flavor: backendsv1alpha1.RunnerOpenTofu, Versions: ">= 1.7.0"}}
					if diff := cmp.Diff(want, e.httpBackend(webBackend.name).Status.Rendered.CompatibleRunners); diff != "" {
						t.Errorf("compatibleRunners (-want +got):\n%s", diff)
					}
					if cm := e.configMap(webConfigMap); !strings.Contains(cm.Data["backend.tf"], "X-Stack") {
						t.Errorf("backend.tf lacks the headers:\n%s", cm.Data["backend.tf"])
					}
				},
			}},
		},
		"a Secret broken after a good render keeps the previous render": {
			objects: []client.Object{newWebBackend(), passwordSecret()},
			target:  webBackend,
			steps: []reconcileStep{{
				name:      "rendered",
				do:        reconcileUntilProbed,
				wantCalls: []string{"FetchSummary"},
				check:     keepRendered,
			}, {
				name: "the password key is renamed",
				before: func(e *reconcileEnv) {
					s := passwordSecret()
					e.update(s, func() { s.Data = map[string][]byte{"pass": []byte(harnessPassword)} })
				},
				wantRequeue:    noRequeue,
				wantConditions: withConditions(stalled("SecretKeyMissing"), wantCond("StateReachable", metav1.ConditionTrue, "Reachable"), unchecked),
				wantEvents:     []recordedEvent{stallEvent("SecretKeyMissing")},
				check:          expectUntouched,
			}, {
				name: "the Secret is deleted",
				before: func(e *reconcileEnv) {
					if err := e.client.Delete(e.ctx, passwordSecret()); err != nil {
						e.t.Fatal(err)
					}
				},
				wantRequeue:    noRequeue,
				wantConditions: withConditions(stalled("SecretNotFound"), wantCond("StateReachable", metav1.ConditionTrue, "Reachable"), unchecked),
				// Ready stays False for another reason: a Warning for
				// it, so that kubectl describe shows each reason in turn.
				wantEvents: []recordedEvent{stallEvent("SecretNotFound")},
				check:      expectUntouched,
			}, {
				name:   "the Secret is back",
				before: func(e *reconcileEnv) { e.create(passwordSecret()) },
				// The credentials are those of the last probe: the
				// probe is not due again.
				wantRequeue:    requeueWithin(DefaultProbeInterval, DefaultProbeInterval*11/10),
				wantConditions: reachable,
				wantEvents:     []recordedEvent{succeeded}, // a recovery
				check:          expectUntouched,
			}},
		},
	}
	runReconcileCases(t, cases)
}
