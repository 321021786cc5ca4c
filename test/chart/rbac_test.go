package chart

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// generatedRules are the rules of config/rbac/role.yaml, which
// controller-gen generates from the controllers' RBAC markers.
func generatedRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	docs := readObjects(t, "config/rbac/role.yaml")
	return decode[rbacv1.ClusterRole](t, find(t, docs, "ClusterRole", "", "manager-role")).Rules
}

// managerSubject is the subject every binding of the manager names.
var managerSubject = []rbacv1.Subject{{Kind: "ServiceAccount", Name: prefix, Namespace: releaseNamespace}}

// TestManagerRBAC checks the manager's permissions in both modes: all
// namespaces, with a ClusterRole holding exactly the generated rules, and
// watched namespaces, with a Role holding them in each namespace and no
// cluster-wide grant of any of them.
func TestManagerRBAC(t *testing.T) {
	cases := map[string]struct {
		set []string
		// namespaces are those that get a Role; none means a ClusterRole.
		namespaces []string
	}{
		"all namespaces": {},
		"watched namespaces": {
			set:        []string{"watchNamespaces={team-a,team-b}"},
			namespaces: []string{"team-a", "team-b"},
		},
		"one watched namespace, the release's own": {
			set:        []string{"watchNamespaces={ops}"},
			namespaces: []string{"ops"},
		},
	}
	want := generatedRules(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			docs := template(t, tc.set...)
			if len(tc.namespaces) == 0 {
				role := decode[rbacv1.ClusterRole](t, find(t, docs, "ClusterRole", "", prefix+"-manager"))
				if diff := cmp.Diff(want, role.Rules); diff != "" {
					t.Errorf("ClusterRole rules differ from config/rbac/role.yaml (-want +got):\n%s", diff)
				}
				binding := decode[rbacv1.ClusterRoleBinding](t, find(t, docs, "ClusterRoleBinding", "", prefix+"-manager"))
				checkBinding(t, binding.RoleRef, binding.Subjects, "ClusterRole", prefix+"-manager")
				bound := boundClusterRoles(t, docs)
				if want := []string{prefix + "-manager", prefix + "-metrics-auth"}; !slices.Equal(bound, want) {
					t.Errorf("ClusterRoles bound to the manager: %v, want %v", bound, want)
				}
				if roles := managerRoles(t, docs); len(roles) != 0 {
					t.Errorf("without watchNamespaces the manager has Roles in %v, want none", roles)
				}
				return
			}

			if got := managerRoles(t, docs); !slices.Equal(got, tc.namespaces) {
				t.Errorf("manager Roles in %v, want %v", got, tc.namespaces)
			}
			for _, ns := range tc.namespaces {
				role := decode[rbacv1.Role](t, find(t, docs, "Role", ns, prefix+"-manager"))
				if diff := cmp.Diff(want, role.Rules); diff != "" {
					t.Errorf("Role rules in %s differ from config/rbac/role.yaml (-want +got):\n%s", ns, diff)
				}
				binding := decode[rbacv1.RoleBinding](t, find(t, docs, "RoleBinding", ns, prefix+"-manager"))
				checkBinding(t, binding.RoleRef, binding.Subjects, "Role", prefix+"-manager")
			}
			// Cluster-wide, the manager only reviews the tokens and
			// rights of metrics scrapes.
			bound := boundClusterRoles(t, docs)
			if want := []string{prefix + "-metrics-auth"}; !slices.Equal(bound, want) {
				t.Errorf("ClusterRoles bound to the manager: %v, want %v", bound, want)
			}
			for _, name := range bound {
				role := decode[rbacv1.ClusterRole](t, find(t, docs, "ClusterRole", "", name))
				for _, rule := range role.Rules {
					if grantsManagerResource(rule) {
						t.Errorf("with watchNamespaces, ClusterRole %s grants the manager %v on %v cluster-wide",
							role.Name, rule.Verbs, rule.Resources)
					}
				}
			}
		})
	}
}

// boundClusterRoles lists the ClusterRoles bound to the manager's
// ServiceAccount, sorted.
func boundClusterRoles(t *testing.T, docs []document) []string {
	t.Helper()
	var roles []string
	for _, d := range ofKind(docs, "ClusterRoleBinding") {
		binding := decode[rbacv1.ClusterRoleBinding](t, d)
		if slices.Contains(binding.Subjects, managerSubject[0]) {
			roles = append(roles, binding.RoleRef.Name)
		}
	}
	slices.Sort(roles)
	return roles
}

// managerRoles lists the namespaces that hold the manager's Role.
func managerRoles(t *testing.T, docs []document) []string {
	t.Helper()
	var namespaces []string
	for _, d := range ofKind(docs, "Role") {
		if d.Metadata.Name == prefix+"-manager" {
			namespaces = append(namespaces, d.Metadata.Namespace)
		}
	}
	return namespaces
}

// grantsManagerResource reports whether rule grants anything on Secrets,
// ConfigMaps, Pods or the operator's kinds, or on every resource.
func grantsManagerResource(rule rbacv1.PolicyRule) bool {
	for _, group := range rule.APIGroups {
		for _, resource := range rule.Resources {
			switch {
			case resource == "*" || group == "*":
				return true
			case group == "" && (resource == "secrets" || resource == "configmaps" || resource == "pods"):
				return true
			case group == "backends.infrastate.io":
				return true
			}
		}
	}
	return false
}

// checkBinding checks that a binding grants the role of kind and name to
// the manager's ServiceAccount only.
func checkBinding(t *testing.T, ref rbacv1.RoleRef, subjects []rbacv1.Subject, kind, name string) {
	t.Helper()
	if diff := cmp.Diff(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}, ref); diff != "" {
		t.Errorf("roleRef of %s (-want +got):\n%s", name, diff)
	}
	if diff := cmp.Diff(managerSubject, subjects); diff != "" {
		t.Errorf("subjects of %s (-want +got):\n%s", name, diff)
	}
}

// TestRolesMatchConfigRBAC checks that the chart's other roles hold the
// rules of their config/rbac counterparts.
func TestRolesMatchConfigRBAC(t *testing.T) {
	cases := map[string]struct {
		kind, namespace, name string
		// source is config/rbac's file, and sourceName the role in it.
		source, sourceName string
	}{
		"leader election": {
			kind: "Role", namespace: releaseNamespace, name: prefix + "-leader-election",
			source: "config/rbac/leader_election_role.yaml", sourceName: "leader-election-role",
		},
		"metrics auth": {
			kind: "ClusterRole", name: prefix + "-metrics-auth",
			source: "config/rbac/metrics_auth_role.yaml", sourceName: "metrics-auth-role",
		},
		"metrics reader": {
			kind: "ClusterRole", name: prefix + "-metrics-reader",
			source: "config/rbac/metrics_reader_role.yaml", sourceName: "metrics-reader",
		},
		"editor": {
			kind: "ClusterRole", name: prefix + "-editor",
			source: "config/rbac/backend_editor_role.yaml", sourceName: "backend-editor-role",
		},
		"viewer": {
			kind: "ClusterRole", name: prefix + "-viewer",
			source: "config/rbac/backend_viewer_role.yaml", sourceName: "backend-viewer-role",
		},
	}
	docs := template(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sourceNamespace := ""
			if tc.kind == "Role" {
				sourceNamespace = "system"
			}
			want := decode[rbacv1.ClusterRole](t, find(t, readObjects(t, tc.source), tc.kind, sourceNamespace, tc.sourceName))
			got := decode[rbacv1.ClusterRole](t, find(t, docs, tc.kind, tc.namespace, tc.name))
			if diff := cmp.Diff(want.Rules, got.Rules); diff != "" {
				t.Errorf("rules differ from %s (-want +got):\n%s", tc.source, diff)
			}
			if diff := cmp.Diff(aggregationLabels(want.Labels), aggregationLabels(got.Labels)); diff != "" {
				t.Errorf("aggregation labels differ from %s (-want +got):\n%s", tc.source, diff)
			}
		})
	}
}

// aggregationLabels are the labels that aggregate a ClusterRole into the
// built-in ones.
func aggregationLabels(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if strings.HasPrefix(k, rbacv1.GroupName+"/aggregate-to-") {
			out[k] = v
		}
	}
	return out
}

// TestToggles checks the values that leave objects out or add them.
func TestToggles(t *testing.T) {
	cases := map[string]struct {
		set []string
		// present and absent are objects as "Kind namespace/name".
		present, absent []string
	}{
		"defaults": {
			present: []string{
				"ServiceAccount ops/" + prefix,
				"Role ops/" + prefix + "-leader-election",
				"ClusterRole /" + prefix + "-editor",
				"ValidatingAdmissionPolicy /values.backends.infrastate.io",
				"ValidatingAdmissionPolicyBinding /values.backends.infrastate.io",
				"Service ops/" + prefix + "-metrics",
			},
			absent: []string{"ServiceMonitor ops/" + prefix, "PrometheusRule ops/" + prefix},
		},
		"no leader election": {
			set:    []string{"leaderElection=false"},
			absent: []string{"Role ops/" + prefix + "-leader-election", "RoleBinding ops/" + prefix + "-leader-election"},
		},
		"an existing ServiceAccount": {
			set:    []string{"serviceAccount.create=false", "serviceAccount.name=" + prefix},
			absent: []string{"ServiceAccount ops/" + prefix},
		},
		"no aggregated roles, no admission policy": {
			set: []string{"rbac.aggregateToDefaultRoles=false", "admissionPolicy=false"},
			absent: []string{
				"ClusterRole /" + prefix + "-editor", "ClusterRole /" + prefix + "-viewer",
				"ValidatingAdmissionPolicy /values.backends.infrastate.io",
				"ValidatingAdmissionPolicyBinding /values.backends.infrastate.io",
			},
		},
		"ServiceMonitor": {
			set:     []string{"metrics.serviceMonitor.enabled=true"},
			present: []string{"ServiceMonitor ops/" + prefix},
			absent:  []string{"PrometheusRule ops/" + prefix},
		},
		"PrometheusRule": {
			set:     []string{"metrics.prometheusRule.enabled=true"},
			present: []string{"PrometheusRule ops/" + prefix},
			absent:  []string{"ServiceMonitor ops/" + prefix},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := names(template(t, tc.set...))
			for _, want := range tc.present {
				if !slices.Contains(got, want) {
					t.Errorf("%s is not rendered; the chart holds %v", want, got)
				}
			}
			for _, unwanted := range tc.absent {
				if slices.Contains(got, unwanted) {
					t.Errorf("%s is rendered, want it left out", unwanted)
				}
			}
		})
	}
}

// TestUserRolesCoverEveryKind checks that the roles aggregated into the
// built-in edit and view roles name every kind of the chart's CRDs and
// its status: a new kind is usable by the namespace's editors and
// visible to its viewers from its first release.
func TestUserRolesCoverEveryKind(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "charts", "backend-operator", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the chart's CRDs: %v, %v", files, err)
	}
	var plurals []string
	for _, file := range files {
		rel, err := filepath.Rel(repoRoot, file)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ofKind(readObjects(t, rel), "CustomResourceDefinition") {
			plurals = append(plurals, decode[apiextensionsv1.CustomResourceDefinition](t, d).Spec.Names.Plural)
		}
	}
	if len(plurals) != len(files) {
		t.Fatalf("found the kinds %v in %d CRD files", plurals, len(files))
	}
	for _, role := range []struct{ source, name, verb string }{
		{"config/rbac/backend_editor_role.yaml", "backend-editor-role", "create"},
		{"config/rbac/backend_viewer_role.yaml", "backend-viewer-role", "watch"},
	} {
		rules := decode[rbacv1.ClusterRole](t, find(t, readObjects(t, role.source), "ClusterRole", "", role.name)).Rules
		for _, plural := range plurals {
			if !allows(rules, plural, role.verb) || !allows(rules, plural+"/status", "get") {
				t.Errorf("%s does not allow %s on %s and get on its status", role.source, role.verb, plural)
			}
		}
	}
}

// allows reports whether rules allow verb on resource of this API.
func allows(rules []rbacv1.PolicyRule, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, "backends.infrastate.io") && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}
