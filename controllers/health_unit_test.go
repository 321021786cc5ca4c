package controllers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/testenv"
)

// health is how GitOps tools read an object: kstatus (kubectl wait
// --for, cli-utils, Flux's health checks without expressions), Flux with
// the healthCheckExprs that docs/gitops.md publishes, and Argo CD with the
// Lua health check that docs/gitops.md publishes.
type health struct {
	Kstatus kstatus.Status
	Flux    kstatus.Status
	ArgoCD  string
}

// The healths a user expects of an object of this API.
var (
	// readsCurrent: done as its spec says.
	readsCurrent = health{kstatus.CurrentStatus, kstatus.CurrentStatus, "Healthy"}
	// readsProgressing: the controller works on it, or waits for something
	// that comes by itself.
	readsProgressing = health{kstatus.InProgressStatus, kstatus.InProgressStatus, "Progressing"}
	// readsRetrying: the last probe or read failed, and is retried at the
	// next interval; Argo CD shows it as Degraded.
	readsRetrying = health{kstatus.InProgressStatus, kstatus.InProgressStatus, "Degraded"}
	// readsFailed: nothing changes until the user fixes the spec or a
	// referenced object.
	readsFailed = health{kstatus.FailedStatus, kstatus.FailedStatus, "Degraded"}
)

// The kinds of this API, as the health cases name them.
const (
	hb = backendsv1alpha1.HttpBackendKind
	cb = backendsv1alpha1.CosBackendKind
	rs = backendsv1alpha1.RemoteStateKind
	sl = backendsv1alpha1.StateLockKind
	og = backendsv1alpha1.OutputGrantKind
	sh = backendsv1alpha1.StateHistoryKind
	sr = backendsv1alpha1.StateRestoreKind
)

// allKinds are the kinds of this API, in the order the cases report them.
var allKinds = []string{hb, cb, rs, sl, og, sh, sr}

// probedKinds are the kinds that probe, read or lock, through the prober:
// all but OutputGrant, which only reports what it grants to whom.
var probedKinds = []string{hb, cb, rs, sl, sh, sr}

// healthCase is one way a reconciliation of an object ends, for the kinds
// it applies to.
type healthCase struct {
	// reason is the reason the case shows, and classifies, in the
	// condition in: Ready when empty, the kind's probe condition
	// (StateReachable, BucketReady, OutputsReady, Locked, SnapshotsReady,
	// Restored) when "probe".
	reason, in string
	// steps set the object's status, per kind.
	steps map[string]healthStep
	// then changes the object after its reconciliation (a new spec, a
	// deletion), nil for nothing.
	then func(obj statusObject)
	want health
}

// eventOnlyReasons are the reasons of this API that only events carry:
// no condition has them, so they have no health.
var eventOnlyReasons = []string{
	backendsv1alpha1.LockReleasedReason, // a deleted StateLock released its lock
}

// TestHealthOfEachReason computes, with the kstatus library, with the Flux
// health check expressions and with the Argo CD Lua health check of
// docs/gitops.md, the health of an object of each kind in each case, from
// conditions set by the controllers' own functions: each reason of each
// kind must read as a user expects, and as docs/gitops.md says.
func TestHealthOfEachReason(t *testing.T) {
	tools := gitopsHealthChecks(t)
	kinds := healthKinds(t)
	for name, tc := range healthCases() {
		t.Run(name, func(t *testing.T) {
			if len(tc.steps) == 0 {
				t.Fatal("the case applies to no kind")
			}
			for _, kind := range allKinds {
				step, ok := tc.steps[kind]
				if !ok {
					continue
				}
				k := kinds[kind]
				obj := k.newObject()
				obj.GetObjectKind().SetGroupVersionKind(backendsv1alpha1.GroupVersion.WithKind(kind))
				obj.SetName("a")
				obj.SetNamespace("health")
				obj.SetGeneration(1)
				reconcileStatus(t, kind, k, obj, step)
				if tc.then != nil {
					tc.then(obj)
				}

				in := tc.in
				switch in {
				case "":
					in = backendsv1alpha1.ReadyCondition
				case "probe":
					in = k.probe
				}
				conds := *obj.StatusConditions()
				if c := findCondition(conds, in); c == nil || c.Reason != tc.reason {
					t.Errorf("%s: %s is %+v, want reason %s\nconditions: %+v", kind, in, c, tc.reason, conds)
				}
				u := toUnstructured(t, obj)
				if diff := cmp.Diff(tc.want, tools.health(t, u)); diff != "" {
					t.Errorf("%s: health mismatch (-want +got):\n%s\nconditions: %+v", kind, diff, conds)
				}
			}
		})
	}
}

// reconcileStatus sets obj's status as one reconciliation of a new object
// does (reconcileObject and finishReconcile, without the API server):
// Reconciling for the new generation, the phases of step, then Ready,
// Reconciling and Stalled from how they ended.
func reconcileStatus(t *testing.T, kind string, k healthKind, obj statusObject, step healthStep) {
	t.Helper()
	*obj.StatusObservedGeneration() = -1
	conds := obj.StatusConditions()
	conditions.MarkReconciling(conds, obj.GetGeneration(), -1)
	out, err := step(t, kind, k, obj)
	if se, ok := conditions.AsStall(err); ok {
		out.Stall = se
	} else {
		out.Err = err
	}
	*obj.StatusObservedGeneration() = conditions.Summarize(conds, obj.GetGeneration(), -1, out)
}

// TestEveryReasonHasAHealth checks that each reason api/v1alpha1 declares
// (every constant whose name ends in Reason) is classified: a case of
// TestHealthOfEachReason shows it, or only events carry it. A new reason
// fails here until a case says how GitOps tools read it.
func TestEveryReasonHasAHealth(t *testing.T) {
	classified := map[string]bool{}
	for _, r := range eventOnlyReasons {
		classified[r] = true
	}
	for _, tc := range healthCases() {
		classified[tc.reason] = true
	}
	declared := declaredReasons(t)
	if len(declared) < 10 {
		t.Fatalf("found only %d reasons in api/v1alpha1: %v", len(declared), declared)
	}
	for name, value := range declared {
		if !classified[value] {
			t.Errorf("%s (%q) has no case in healthCases: add how each kind that sets it reads in kstatus, Flux and Argo CD (docs/gitops.md), or list it in eventOnlyReasons", name, value)
		}
	}
}

// declaredReasons are the string constants of api/v1alpha1 whose names
// end in Reason, by name.
func declaredReasons(t *testing.T) map[string]string {
	t.Helper()
	dir := filepath.Join(testenv.RepoRoot(), "api", "v1alpha1")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasSuffix(name.Name, "Reason") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Errorf("%s: %s is not a string literal", fset.Position(name.Pos()), name.Name)
						continue
					}
					value, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					reasons[name.Name] = value
				}
			}
		}
	}
	return reasons
}

// findCondition returns the condition of type t, nil when there is none.
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
