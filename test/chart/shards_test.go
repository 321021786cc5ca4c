package chart

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// The labels that set the managers' Pods apart: the component of the main
// manager's and of a shard's, and the shard's name on a shard's.
const (
	componentLabel = "app.kubernetes.io/component"
	shardPodLabel  = "backends.infrastate.io/shard"
)

// goConstant returns the value of the string constant name declared in
// the Go file path of the repository: the chart repeats some of the
// manager's constants, which the tests compare with the code's.
func goConstant(t *testing.T, path, name string) string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), path, readFile(t, path), 0)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if id.Name != name || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s: %s is not a string literal", path, name)
				}
				value, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatalf("%s: %s: %v", path, name, err)
				}
				return value
			}
		}
	}
	t.Fatalf("%s declares no constant %s", path, name)
	return ""
}

// shardLabel is the label that assigns an object to a shard: the code's,
// which the chart repeats.
func shardLabel(t *testing.T) string {
	t.Helper()
	return goConstant(t, "controllers/shard.go", "ShardLabel")
}

// defaultLeaseName is the Lease of a manager run without
// --leader-election-id: the code's, which the chart repeats.
func defaultLeaseName(t *testing.T) string {
	t.Helper()
	return goConstant(t, "cmd/manager/options.go", "defaultLeaderElectionID")
}

// renderedManagers are the chart's Deployments rendered with set, by name.
func renderedManagers(t *testing.T, set ...string) map[string]appsv1.Deployment {
	t.Helper()
	out := map[string]appsv1.Deployment{}
	for _, d := range ofKind(template(t, set...), "Deployment") {
		out[d.Metadata.Name] = decode[appsv1.Deployment](t, d)
	}
	return out
}

// flagValues returns the values of every --flag=value argument of args,
// in order, and whether the bare --flag is among them.
func flagValues(args []string, flag string) (values []string, bare bool) {
	for _, a := range args {
		if a == flag {
			bare = true
		} else if v, ok := strings.CutPrefix(a, flag+"="); ok {
			values = append(values, v)
		}
	}
	return values, bare
}

// leaseName is the Lease the manager's arguments make it compete for: its
// --leader-election-id or the manager's default; empty without
// --leader-elect.
func leaseName(t *testing.T, args []string) string {
	t.Helper()
	if _, elect := flagValues(args, "--leader-elect"); !elect {
		return ""
	}
	switch ids, _ := flagValues(args, "--leader-election-id"); len(ids) {
	case 0:
		return defaultLeaseName(t)
	case 1:
		return ids[0]
	default:
		t.Fatalf("args %v set --leader-election-id %d times", args, len(ids))
		return ""
	}
}

// TestShards checks the managers the value shards renders: one Deployment
// per shard next to the main one, each with Flux's label selector for its
// shard (the main one, the objects without the label) and a Lease of its
// own; each Deployment's selector matches its own Pods and no other's, and
// the metrics Service selects them all; all share one ServiceAccount.
func TestShards(t *testing.T) {
	label, lease := shardLabel(t), defaultLeaseName(t)
	type manager struct {
		// Selector is the --watch-label-selector; empty for none.
		Selector string
		// Lease is the Lease the manager competes for; empty for none.
		Lease string
		// Shard is the value of the shard label on its Pods; empty for
		// none.
		Shard string
	}
	cases := map[string]struct {
		set  []string
		want map[string]manager
	}{
		"no shards": {
			want: map[string]manager{prefix: {Lease: lease}},
		},
		"two shards": {
			set: []string{"shards={a,b}"},
			want: map[string]manager{
				prefix:              {Selector: "!" + label, Lease: lease},
				prefix + "-shard-a": {Selector: label + " in (a)", Lease: lease + "-a", Shard: "a"},
				prefix + "-shard-b": {Selector: label + " in (b)", Lease: lease + "-b", Shard: "b"},
			},
		},
		"two shards with a Lease name": {
			set: []string{"shards={a,b}", "leaderElectionID=team-x"},
			want: map[string]manager{
				prefix:              {Selector: "!" + label, Lease: "team-x"},
				prefix + "-shard-a": {Selector: label + " in (a)", Lease: "team-x-a", Shard: "a"},
				prefix + "-shard-b": {Selector: label + " in (b)", Lease: "team-x-b", Shard: "b"},
			},
		},
		"two shards without leader election": {
			set: []string{"shards={a,b}", "leaderElection=false"},
			want: map[string]manager{
				prefix:              {Selector: "!" + label},
				prefix + "-shard-a": {Selector: label + " in (a)", Shard: "a"},
				prefix + "-shard-b": {Selector: label + " in (b)", Shard: "b"},
			},
		},
		"shard names YAML reads as other types": {
			set: []string{"shards={on,0123}"},
			want: map[string]manager{
				prefix:                 {Selector: "!" + label, Lease: lease},
				prefix + "-shard-on":   {Selector: label + " in (on)", Lease: lease + "-on", Shard: "on"},
				prefix + "-shard-0123": {Selector: label + " in (0123)", Lease: lease + "-0123", Shard: "0123"},
			},
		},
		"a shard in namespaced mode": {
			set: []string{"shards={a}", "watchNamespaces={team-a}"},
			want: map[string]manager{
				prefix:              {Selector: "!" + label, Lease: lease},
				prefix + "-shard-a": {Selector: label + " in (a)", Lease: lease + "-a", Shard: "a"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			managers := renderedManagers(t, tc.set...)
			if diff := cmp.Diff(slices.Sorted(maps.Keys(tc.want)), slices.Sorted(maps.Keys(managers))); diff != "" {
				t.Fatalf("Deployments (-want +got):\n%s", diff)
			}
			leases := map[string]string{}
			for dname, d := range managers {
				want := tc.want[dname]
				args := managerContainer(t, d).Args
				var got manager
				switch selectors, _ := flagValues(args, "--watch-label-selector"); len(selectors) {
				case 0:
				case 1:
					got.Selector = selectors[0]
				default:
					t.Errorf("%s: args %v set --watch-label-selector %d times", dname, args, len(selectors))
				}
				got.Lease = leaseName(t, args)
				got.Shard = d.Spec.Template.Labels[shardPodLabel]
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", dname, diff)
				}
				if other, ok := leases[got.Lease]; ok && got.Lease != "" {
					t.Errorf("%s and %s compete for one Lease, %s", dname, other, got.Lease)
				}
				leases[got.Lease] = dname
				if sa := d.Spec.Template.Spec.ServiceAccountName; sa != prefix {
					t.Errorf("%s runs as ServiceAccount %q, want %q", dname, sa, prefix)
				}
			}
			checkDisjointSelectors(t, managers)
			checkMetricsServiceSelects(t, template(t, tc.set...), managers)
		})
	}
}

// checkDisjointSelectors checks that each Deployment's selector matches
// its own Pods' labels and no other Deployment's.
func checkDisjointSelectors(t *testing.T, managers map[string]appsv1.Deployment) {
	t.Helper()
	for name, d := range managers {
		selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			t.Fatalf("%s: its selector: %v", name, err)
		}
		for podsOf, other := range managers {
			matches := selector.Matches(labels.Set(other.Spec.Template.Labels))
			switch {
			case podsOf == name && !matches:
				t.Errorf("%s: its selector %s does not match its own Pods' labels %v", name, selector, other.Spec.Template.Labels)
			case podsOf != name && matches:
				t.Errorf("%s: its selector %s matches the Pods of %s (%v)", name, selector, podsOf, other.Spec.Template.Labels)
			}
		}
	}
}

// checkMetricsServiceSelects checks that the metrics Service selects the
// Pods of every manager, so that a scrape of its endpoints reads them all.
func checkMetricsServiceSelects(t *testing.T, docs []document, managers map[string]appsv1.Deployment) {
	t.Helper()
	svc := decode[corev1.Service](t, find(t, docs, "Service", releaseNamespace, prefix+"-metrics"))
	selector := labels.SelectorFromSet(svc.Spec.Selector)
	for name, d := range managers {
		if !selector.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("the metrics Service's selector %s does not match the Pods of %s (%v)", selector, name, d.Spec.Template.Labels)
		}
	}
}

// TestShardDeploymentsAreTheMainOnes checks that the values apply to every
// manager alike: with many of them set, each shard's Deployment is the main
// one but for its name, the labels that set its Pods apart, its label
// selector and its Lease.
func TestShardDeploymentsAreTheMainOnes(t *testing.T) {
	set := []string{
		"shards={a,b}", "replicaCount=2", "image.repository=registry.example.com/bo", "image.tag=v9.9.9",
		"imagePullSecrets[0].name=pull", "watchNamespaces={team-a,team-b}", "leaderElectionID=team-x",
		"secretReferencePolicy=labeled", "deniedAddressCIDRs={10.96.0.0/12}", "allowedAddressCIDRs={192.0.2.0/24}",
		"maxConcurrentProbes=32", "maxConcurrentProbesPerNamespace=2", "maxConcurrentDecryptions=1", "defaultProbeInterval=1m",
		"budgets.readMemoryTotal=64Mi", "extraArgs={--zap-log-level=debug,--lock-release-wait=1m}",
		"resources.limits.memory=1Gi", "resources.requests.cpu=100m", "spoolSizeLimit=8Gi",
		"nodeSelector.pool=ops", "tolerations[0].key=dedicated", "tolerations[0].operator=Exists",
		"affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight=1",
		"affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey=kubernetes.io/hostname",
		"priorityClassName=system-cluster-critical", "podAnnotations.note=x", "podLabels.team=platform",
	}
	managers := renderedManagers(t, set...)
	main, ok := managers[prefix]
	if !ok {
		t.Fatalf("no main Deployment %s among %v", prefix, slices.Sorted(maps.Keys(managers)))
	}
	if got := main.Spec.Template.Labels["team"]; got != "platform" {
		t.Errorf("the main Pods' label team = %q, want platform", got)
	}
	for _, shard := range []string{"a", "b"} {
		t.Run(shard, func(t *testing.T) {
			d, ok := managers[prefix+"-shard-"+shard]
			if !ok {
				t.Fatalf("no Deployment for shard %s among %v", shard, slices.Sorted(maps.Keys(managers)))
			}
			if diff := cmp.Diff(withoutShard(main), withoutShard(d)); diff != "" {
				t.Errorf("shard %s's Deployment differs from the main one in more than its shard (-main +shard):\n%s", shard, diff)
			}
		})
	}
}

// withoutShard returns d without what sets one manager apart from
// another: its name, the component and shard labels, its
// --watch-label-selector and its --leader-election-id.
func withoutShard(d appsv1.Deployment) appsv1.Deployment {
	d = *d.DeepCopy()
	d.Name = ""
	for _, m := range []map[string]string{d.Labels, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels} {
		delete(m, componentLabel)
		delete(m, shardPodLabel)
	}
	c := &d.Spec.Template.Spec.Containers[0]
	c.Args = slices.DeleteFunc(c.Args, func(a string) bool {
		return strings.HasPrefix(a, "--watch-label-selector=") || strings.HasPrefix(a, "--leader-election-id=")
	})
	return d
}

// TestShardLeaseNameTooLong checks that a shard whose Lease name would be
// longer than a Lease name may be fails the render, naming the shard.
func TestShardLeaseNameTooLong(t *testing.T) {
	id := strings.Repeat("a", 250)
	args := templateArgs("leaderElectionID="+id, "shards={ok,abc}")
	_, stderr, err := testtools.RunHelm(t.Context(), t, args...)
	if err == nil {
		t.Fatalf("helm template with a %d-character leaderElectionID and shard abc succeeded, want it refused", len(id))
	}
	if want := "shard abc: its Lease name, " + id + "-abc, is longer than 253 characters"; !strings.Contains(stderr, want) {
		t.Errorf("helm template failed with\n%s\nwant a message containing %q", stderr, want)
	}
	// One character less fits: 253.
	template(t, "leaderElectionID="+id, "shards={ab}")
}
