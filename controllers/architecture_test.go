package controllers

import (
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// maxFileCycle bounds the largest set of this package's files that depend
// on each other in a cycle (a strongly connected component of the graph
// whose edges go from the file that uses a declaration to the file that
// declares it). A cycle that grows past it fails the test: the files of a
// package a newcomer can walk form layers, where only a kind's own few
// files (its reconciler and its phases) may use each other.
const maxFileCycle = 3

// controllersPackage is the import path of this package.
const controllersPackage = "github.com/infrastate/backend-operator/controllers"

// TestFileDependenciesFormLayers loads this package's production files
// with their type information and checks that no cycle of files is larger
// than maxFileCycle.
func TestFileDependenciesFormLayers(t *testing.T) {
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
	}, controllersPackage)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		t.Fatalf("loading %s: %v", controllersPackage, pkgs)
	}
	graph := fileGraph(pkgs[0])
	cycles := fileCycles(graph)
	if len(cycles) > 0 && len(cycles[0]) > maxFileCycle {
		t.Errorf("%d files depend on each other in a cycle, more than %d: %s", len(cycles[0]), maxFileCycle, strings.Join(cycles[0], " "))
	}
	for _, c := range cycles {
		t.Logf("a cycle of %d files: %s", len(c), strings.Join(c, " "))
	}
}

// TestInternalPackagesNeverImportControllers checks that the packages
// under controllers/ import in one direction only: none of them imports
// this package, so the machinery they hold knows nothing of the kinds.
func TestInternalPackagesNeverImportControllers(t *testing.T) {
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps}, controllersPackage+"/...")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		if p.PkgPath == controllersPackage {
			continue
		}
		packages.Visit([]*packages.Package{p}, nil, func(dep *packages.Package) {
			if dep.PkgPath == controllersPackage {
				t.Errorf("%s imports %s, directly or not", p.PkgPath, controllersPackage)
			}
		})
	}
}

// fileGraph returns, for each production file of p (by base name), the
// other files of p whose declarations it uses.
func fileGraph(p *packages.Package) map[string][]string {
	file := func(pos token.Pos) string { return filepath.Base(p.Fset.Position(pos).Filename) }
	edges := map[string]map[string]bool{}
	for _, f := range p.GoFiles {
		edges[filepath.Base(f)] = map[string]bool{}
	}
	for id, obj := range p.TypesInfo.Uses {
		if obj.Pkg() != p.Types || !obj.Pos().IsValid() {
			continue
		}
		from, to := file(id.Pos()), file(obj.Pos())
		if from != to {
			edges[from][to] = true
		}
	}
	graph := map[string][]string{}
	for from, tos := range edges {
		for to := range tos {
			graph[from] = append(graph[from], to)
		}
		sort.Strings(graph[from])
		if graph[from] == nil {
			graph[from] = []string{}
		}
	}
	return graph
}

// fileCycles returns the strongly connected components of graph that hold
// more than one file, largest first, each sorted (Tarjan's algorithm).
func fileCycles(graph map[string][]string) [][]string {
	var (
		index    = map[string]int{}
		low      = map[string]int{}
		onStack  = map[string]bool{}
		stack    []string
		next     int
		cycles   [][]string
		connect  func(v string)
		vertices = make([]string, 0, len(graph))
	)
	connect = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range graph[v] {
			if _, seen := index[w]; !seen {
				connect(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var component []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			component = append(component, w)
			if w == v {
				break
			}
		}
		if len(component) > 1 {
			sort.Strings(component)
			cycles = append(cycles, component)
		}
	}
	for v := range graph {
		vertices = append(vertices, v)
	}
	sort.Strings(vertices)
	for _, v := range vertices {
		if _, seen := index[v]; !seen {
			connect(v)
		}
	}
	slices.SortStableFunc(cycles, func(a, b []string) int { return len(b) - len(a) })
	return cycles
}

func TestFileCycles(t *testing.T) {
	cases := map[string]struct {
		graph map[string][]string
		want  [][]string
	}{
		"no edges":    {graph: map[string][]string{"a": {}, "b": {}}},
		"a layer":     {graph: map[string][]string{"a": {"b"}, "b": {"c"}, "c": {}}},
		"two in turn": {graph: map[string][]string{"a": {"b"}, "b": {"a"}, "c": {"a"}}, want: [][]string{{"a", "b"}}},
		"two cycles, largest first": {
			graph: map[string][]string{"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c", "a"}},
			want:  [][]string{{"c", "d", "e"}, {"a", "b"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := fileCycles(tc.graph)
			if len(got) != len(tc.want) {
				t.Fatalf("fileCycles = %v, want %v", got, tc.want)
			}
			for i := range got {
				if !slices.Equal(got[i], tc.want[i]) {
					t.Errorf("fileCycles = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// TestBinariesNeverImportTestPackages checks that the operator and the
// state server link none of the packages that exist for tests: builders,
// the envtest environment, the tool lookups.
func TestBinariesNeverImportTestPackages(t *testing.T) {
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps},
		"github.com/infrastate/backend-operator/cmd/...")
	if err != nil {
		t.Fatal(err)
	}
	testOnly := []string{
		"github.com/infrastate/backend-operator/internal/testing/",
		"github.com/infrastate/backend-operator/internal/testenv",
		"github.com/infrastate/backend-operator/internal/testtools",
	}
	for _, p := range pkgs {
		packages.Visit([]*packages.Package{p}, nil, func(dep *packages.Package) {
			for _, prefix := range testOnly {
				if strings.HasPrefix(dep.PkgPath, prefix) {
					t.Errorf("%s links %s, which exists for tests", p.PkgPath, dep.PkgPath)
				}
			}
		})
	}
}
