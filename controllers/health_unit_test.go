package controllers

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	lua "github.com/yuin/gopher-lua"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/testenv"
)

// health is how GitOps tools read an object: kstatus (Flux's health
// checks, kubectl wait --for, cli-utils), and the Argo CD health check
// that docs/gitops.md publishes.
type health struct {
	Kstatus kstatus.Status
	ArgoCD  string
}

// TestHealthOfEachCase computes, with the kstatus library and with the
// Argo CD Lua health check of docs/gitops.md, the health of both backend
// kinds in each case, from conditions set by the controllers' own
// functions: the two kinds must read alike, and as the docs say.
func TestHealthOfEachCase(t *testing.T) {
	argo := argoHealthCheck(t)
	refused := &stateclient.RetryError{Method: "GET", URL: "u", Attempts: 1, Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}
	type probe struct{ http, cos observation }
	cases := map[string]struct {
		probe       *probe // nil: no probe result yet
		lock        *lockReading
		pending     bool
		stall       *stallError
		newSpec     bool
		want        health
		readyReason string
	}{
		"ready": {
			probe: &probe{stateObservation(nil, nil), bucketObservation("b", nil)},
			want:  health{kstatus.CurrentStatus, "Healthy"}, readyReason: "Succeeded",
		},
		"the backend cannot be reached": {
			probe: &probe{probeFailure(refused), bucketObservation("b", fmt.Errorf("list: %w", cos.ErrUnreachable))},
			want:  health{kstatus.InProgressStatus, "Degraded"}, readyReason: "Unreachable",
		},
		"the credentials are refused": {
			probe: &probe{probeFailure(&stateclient.StatusError{StatusCode: 403}), bucketObservation("b", fmt.Errorf("list: %w", cos.ErrAccessDenied))},
			want:  health{kstatus.InProgressStatus, "Degraded"},
		},
		"the lock cannot be read": {
			probe: &probe{stateObservation(nil, nil), bucketObservation("b", nil)},
			lock:  &lockReading{err: context.DeadlineExceeded},
			want:  health{kstatus.CurrentStatus, "Healthy"}, readyReason: "Succeeded",
		},
		"the first probe is under way": {
			pending: true,
			want:    health{kstatus.InProgressStatus, "Progressing"}, readyReason: "Progressing",
		},
		"a Secret is missing": {
			stall: &stallError{reason: backendsv1alpha1.SecretNotFoundReason, message: "Secret p not found"},
			want:  health{kstatus.FailedStatus, "Degraded"}, readyReason: "SecretNotFound",
		},
		"a new spec is not observed yet": {
			probe: &probe{stateObservation(nil, nil), bucketObservation("b", nil)}, newSpec: true,
			want: health{kstatus.InProgressStatus, "Progressing"}, readyReason: "Succeeded",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			httpBackend := &backendsv1alpha1.HttpBackend{TypeMeta: metav1.TypeMeta{APIVersion: "backends.infrastate.io/v1alpha1", Kind: "HttpBackend"},
				ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", Generation: 1}}
			cosBackend := &backendsv1alpha1.CosBackend{TypeMeta: metav1.TypeMeta{APIVersion: "backends.infrastate.io/v1alpha1", Kind: "CosBackend"},
				ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", Generation: 1}}
			for _, k := range []struct {
				obj       statusObject
				condition string
				obs       func(probe) observation
			}{
				{httpBackend, backendsv1alpha1.StateReachableCondition, func(p probe) observation { return p.http }},
				{cosBackend, backendsv1alpha1.BucketReadyCondition, func(p probe) observation { return p.cos }},
			} {
				conds := k.obj.StatusConditions()
				*k.obj.StatusObservedGeneration() = -1
				if tc.probe != nil {
					setCondition(conds, 1, k.condition, k.obs(*tc.probe))
				}
				if tc.lock != nil {
					setCondition(conds, 1, backendsv1alpha1.LockedCondition, lockStatus(*tc.lock, lockTerms{}).obs)
				}
				*k.obj.StatusObservedGeneration() = summarize(conds, 1, -1,
					outcome{stall: tc.stall, readyMessage: "Rendered", gates: []string{k.condition}, probePending: tc.pending})
				if tc.newSpec {
					k.obj.SetGeneration(2)
				}
				u := toUnstructured(t, k.obj)
				res, err := kstatus.Compute(u)
				if err != nil {
					t.Fatal(err)
				}
				got := health{Kstatus: res.Status, ArgoCD: argo(u)}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("%s: health mismatch (-want +got):\n%s\nconditions: %+v", u.GetKind(), diff, *conds)
				}
				if tc.readyReason != "" {
					if ready := findCondition(*conds, "Ready"); ready == nil || ready.Reason != tc.readyReason {
						t.Errorf("%s: Ready %+v, want reason %s", u.GetKind(), ready, tc.readyReason)
					}
				}
			}
		})
	}
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// argoHealthCheck returns the Argo CD health check that docs/gitops.md
// publishes for HttpBackend, run by the Lua interpreter Argo CD embeds.
func argoHealthCheck(t *testing.T) func(*unstructured.Unstructured) string {
	t.Helper()
	const key = "resource.customizations.health.backends.infrastate.io_HttpBackend:"
	doc, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "gitops.md"))
	if err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	indent, in := "", false
	for lines := bufio.NewScanner(bytes.NewReader(doc)); lines.Scan(); {
		line := lines.Text()
		switch {
		case !in && strings.Contains(line, key):
			in, indent = true, line[:len(line)-len(strings.TrimLeft(line, " "))]+"  "
		case in && strings.HasPrefix(line, indent):
			script.WriteString(strings.TrimPrefix(line, indent) + "\n")
		case in:
			in = false
		}
	}
	if script.Len() == 0 {
		t.Fatalf("docs/gitops.md has no %s", key)
	}
	return func(u *unstructured.Unstructured) string {
		state := lua.NewState()
		defer state.Close()
		state.SetGlobal("obj", luaValue(state, u.Object))
		if err := state.DoString(script.String()); err != nil {
			t.Fatalf("the health check of docs/gitops.md fails: %v", err)
		}
		res, ok := state.Get(-1).(*lua.LTable)
		if !ok {
			t.Fatalf("the health check of docs/gitops.md returned %v", state.Get(-1))
		}
		return res.RawGetString("status").String()
	}
}

// luaValue converts a JSON-like value into Lua, as Argo CD does.
func luaValue(state *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := state.NewTable()
		for k, e := range v {
			t.RawSetString(k, luaValue(state, e))
		}
		return t
	case []any:
		t := state.NewTable()
		for _, e := range v {
			t.Append(luaValue(state, e))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case nil:
		return lua.LNil
	}
	panic(errors.New("unexpected JSON value"))
}
