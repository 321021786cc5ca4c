package controllers

// How GitOps tools read an object of this API, with the health checks
// docs/gitops.md publishes: kstatus, the Flux healthCheckExprs evaluated
// as kustomize-controller does, and the Argo CD Lua health check run as
// Argo CD does.

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testenv"
)

// gitopsTools are the health checks of docs/gitops.md, by kind.
type gitopsTools struct {
	// flux are the healthCheckExprs of the Flux Kustomization.
	flux map[string]fluxExprs
	// argo are the Lua scripts of argocd-cm.
	argo map[string]string
}

// fluxExprs are the CEL expressions of one entry of healthCheckExprs.
type fluxExprs struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	InProgress string `json:"inProgress"`
	Failed     string `json:"failed"`
	Current    string `json:"current"`
}

// argoHealthKey is the argocd-cm key of a kind's Lua health check.
const argoHealthKey = "resource.customizations.health.backends.infrastate.io_"

// gitopsHealthChecks reads the health checks docs/gitops.md publishes,
// from its YAML blocks: a Flux Kustomization with healthCheckExprs, and
// the ConfigMap argocd-cm. Each must cover every kind of this API.
func gitopsHealthChecks(t *testing.T) gitopsTools {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "gitops.md"))
	if err != nil {
		t.Fatal(err)
	}
	tools := gitopsTools{flux: map[string]fluxExprs{}, argo: map[string]string{}}
	for _, block := range yamlBlocks(doc) {
		var manifest struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				HealthCheckExprs []fluxExprs `json:"healthCheckExprs"`
			} `json:"spec"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal(block, &manifest); err != nil {
			t.Fatalf("docs/gitops.md holds a YAML block that does not parse: %v\n%s", err, block)
		}
		for _, e := range manifest.Spec.HealthCheckExprs {
			if _, dup := tools.flux[e.Kind]; dup {
				t.Errorf("docs/gitops.md has healthCheckExprs for %s twice", e.Kind)
			}
			tools.flux[e.Kind] = e
		}
		if manifest.Kind == "ConfigMap" && manifest.Metadata.Name == "argocd-cm" {
			for key, script := range manifest.Data {
				if kind, ok := strings.CutPrefix(key, argoHealthKey); ok {
					tools.argo[kind] = script
				}
			}
		}
	}
	for _, kind := range allKinds {
		if e, ok := tools.flux[kind]; !ok || e.APIVersion != backendsv1alpha1.GroupVersion.String() {
			t.Errorf("docs/gitops.md has no Flux healthCheckExprs for %s of %s", kind, backendsv1alpha1.GroupVersion)
		}
		if _, ok := tools.argo[kind]; !ok {
			t.Errorf("docs/gitops.md has no Argo CD health check %s%s", argoHealthKey, kind)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return tools
}

// yamlBlocks are the contents of the ```yaml blocks of a Markdown file.
func yamlBlocks(doc []byte) [][]byte {
	var blocks [][]byte
	var block *bytes.Buffer
	for lines := bufio.NewScanner(bytes.NewReader(doc)); lines.Scan(); {
		line := lines.Text()
		switch {
		case block == nil && strings.TrimSpace(line) == "```yaml":
			block = &bytes.Buffer{}
		case block != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, block.Bytes())
			block = nil
		case block != nil:
			block.WriteString(line + "\n")
		}
	}
	return blocks
}

// health is how each tool reads u.
func (g gitopsTools) health(t *testing.T, u *unstructured.Unstructured) health {
	t.Helper()
	res, err := kstatus.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return health{Kstatus: res.Status, Flux: g.fluxStatus(t, u), ArgoCD: g.argoHealth(t, u)}
}

// fluxStatus evaluates the kind's healthCheckExprs as kustomize-controller
// does (fluxcd/pkg runtime/cel, StatusEvaluator): InProgress while
// status.observedGeneration differs from metadata.generation, then the
// first of inProgress, failed and current that is true, and InProgress
// when none is.
func (g gitopsTools) fluxStatus(t *testing.T, u *unstructured.Unstructured) kstatus.Status {
	t.Helper()
	e := g.flux[u.GetKind()]
	observed, found, err := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if err != nil {
		t.Fatal(err)
	}
	if found && observed != u.GetGeneration() {
		return kstatus.InProgressStatus
	}
	for _, check := range []struct {
		expr   string
		status kstatus.Status
	}{{e.InProgress, kstatus.InProgressStatus}, {e.Failed, kstatus.FailedStatus}, {e.Current, kstatus.CurrentStatus}} {
		if check.expr != "" && evalFluxExpr(t, check.expr, u.Object) {
			return check.status
		}
	}
	return kstatus.InProgressStatus
}

// evalFluxExpr evaluates a CEL expression in the environment of
// kustomize-controller's health checks (fluxcd/pkg runtime/cel,
// NewExpression): parsed, not compiled, the object's top-level fields as
// variables.
func evalFluxExpr(t *testing.T, expr string, obj map[string]any) bool {
	t.Helper()
	env, err := cel.NewEnv(cel.HomogeneousAggregateLiterals(), cel.EagerlyValidateDeclarations(true), cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true), cel.OptionalTypes(), ext.Strings(), ext.Sets(), ext.Encoders())
	if err != nil {
		t.Fatal(err)
	}
	parsed, issues := env.Parse(expr)
	if issues != nil && issues.Err() != nil {
		t.Fatalf("the Flux expression %q of docs/gitops.md does not parse: %v", expr, issues.Err())
	}
	prog, err := env.Program(parsed, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		t.Fatal(err)
	}
	val, _, err := prog.Eval(obj)
	if err != nil {
		t.Fatalf("the Flux expression %q of docs/gitops.md fails on %v: %v", expr, obj["status"], err)
	}
	b, ok := val.(types.Bool)
	if !ok {
		t.Fatalf("the Flux expression %q of docs/gitops.md is %v, not a bool", expr, val)
	}
	return bool(b)
}

// argoHealth runs the kind's Argo CD health check, as Argo CD does
// (gitops-engine's GetResourceHealth): an object being deleted is
// Progressing whatever its status, without running the check; otherwise
// the check's status, by the Lua interpreter Argo CD embeds.
func (g gitopsTools) argoHealth(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	if u.GetDeletionTimestamp() != nil {
		return "Progressing"
	}
	state := lua.NewState()
	defer state.Close()
	state.SetGlobal("obj", luaValue(state, u.Object))
	if err := state.DoString(g.argo[u.GetKind()]); err != nil {
		t.Fatalf("the health check of docs/gitops.md fails: %v", err)
	}
	res, ok := state.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the health check of docs/gitops.md returned %v", state.Get(-1))
	}
	got := res.RawGetString("status").String()
	if !slices.Contains([]string{"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}, got) {
		t.Fatalf("the health check of docs/gitops.md returned the status %q, which Argo CD does not know", got)
	}
	return got
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
