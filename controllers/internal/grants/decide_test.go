package grants

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

var (
	network = backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.HttpBackendKind, Name: "network"}
	dns     = backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.CosBackendKind, Name: "dns"}
)

// grant is an OutputGrant named name with spec.
func grant(name string, spec backendsv1alpha1.OutputGrantSpec) backendsv1alpha1.OutputGrant {
	return backendsv1alpha1.OutputGrant{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "producer"}, Spec: spec}
}

// to names consumer namespaces.
func to(namespaces ...string) []backendsv1alpha1.GrantConsumer {
	var out []backendsv1alpha1.GrantConsumer
	for _, ns := range namespaces {
		out = append(out, backendsv1alpha1.GrantConsumer{Namespace: ns})
	}
	return out
}

// selecting is a consumer entry matching labels.
func selecting(matchLabels map[string]string) []backendsv1alpha1.GrantConsumer {
	return []backendsv1alpha1.GrantConsumer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: matchLabels}}}
}

// output is one output the state holds.
type output struct {
	name      string
	sensitive bool
}

func TestDecide(t *testing.T) {
	deleted := grant("leaving", backendsv1alpha1.OutputGrantSpec{To: to("app")})
	deleted.DeletionTimestamp = new(metav1.Now())
	badSelector := grant("bad", backendsv1alpha1.OutputGrantSpec{To: []backendsv1alpha1.GrantConsumer{{NamespaceSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Sometimes"}}}}}})
	req := Request{Consumer: "app", ConsumerLabels: map[string]string{"team": "app", "env": "prod"}, Backend: network, Workspace: "default"}
	state := []output{{"vpc_id", false}, {"subnets", false}, {"db_password", true}, {"api_token", true}}

	tests := []struct {
		name   string
		grants []backendsv1alpha1.OutputGrant
		req    Request
		// wantGrants are the covering grants; wantAllowed the outputs of
		// state it may publish; wantDescribe what messages say.
		wantGrants   []string
		wantAllowed  []string
		wantDescribe string
	}{
		{
			name:         "no grant grants nothing",
			req:          req,
			wantDescribe: "nothing",
		},
		{
			name:         "a grant to another namespace grants nothing",
			grants:       []backendsv1alpha1.OutputGrant{grant("g", backendsv1alpha1.OutputGrantSpec{To: to("web")})},
			req:          req,
			wantDescribe: "nothing",
		},
		{
			name:         "an empty list of outputs grants every non-sensitive output, never a sensitive one",
			grants:       []backendsv1alpha1.OutputGrant{grant("g", backendsv1alpha1.OutputGrantSpec{To: to("app")})},
			req:          req,
			wantGrants:   []string{"g"},
			wantAllowed:  []string{"vpc_id", "subnets"},
			wantDescribe: "every non-sensitive output (OutputGrant g)",
		},
		{
			name: "named outputs only, and a sensitive one only when named as such",
			grants: []backendsv1alpha1.OutputGrant{grant("g", backendsv1alpha1.OutputGrantSpec{To: to("app"),
				Outputs: []string{"vpc_id", "db_password"}, SensitiveOutputs: []string{"api_token"}})},
			req:          req,
			wantGrants:   []string{"g"},
			wantAllowed:  []string{"vpc_id", "api_token"},
			wantDescribe: "outputs db_password, vpc_id and sensitive outputs api_token (OutputGrant g)",
		},
		{
			name: "grants add up",
			grants: []backendsv1alpha1.OutputGrant{
				grant("b", backendsv1alpha1.OutputGrantSpec{To: to("app"), Outputs: []string{"subnets"}}),
				grant("a", backendsv1alpha1.OutputGrantSpec{To: to("app"), Outputs: []string{"vpc_id"}}),
			},
			req:          req,
			wantGrants:   []string{"a", "b"},
			wantAllowed:  []string{"vpc_id", "subnets"},
			wantDescribe: "outputs subnets, vpc_id (OutputGrant a, b)",
		},
		{
			name:         "another backend of the namespace is not granted",
			grants:       []backendsv1alpha1.OutputGrant{grant("g", backendsv1alpha1.OutputGrantSpec{To: to("app"), Backends: []backendsv1alpha1.BackendReference{dns}})},
			req:          req,
			wantDescribe: "nothing",
		},
		{
			name: "a backend of the same name and another kind is not granted",
			grants: []backendsv1alpha1.OutputGrant{grant("g", backendsv1alpha1.OutputGrantSpec{To: to("app"),
				Backends: []backendsv1alpha1.BackendReference{{Kind: backendsv1alpha1.CosBackendKind, Name: "network"}}})},
			req:          req,
			wantDescribe: "nothing",
		},
		{
			name:         "a listed backend is granted",
			grants:       []backendsv1alpha1.OutputGrant{grant("g", backendsv1alpha1.OutputGrantSpec{To: to("app"), Backends: []backendsv1alpha1.BackendReference{dns, network}})},
			req:          req,
			wantGrants:   []string{"g"},
			wantAllowed:  []string{"vpc_id", "subnets"},
			wantDescribe: "every non-sensitive output (OutputGrant g)",
		},
		{
			name:         "another workspace is not granted",
			grants:       []backendsv1alpha1.OutputGrant{grant("g", backendsv1alpha1.OutputGrantSpec{To: to("app"), Workspaces: []string{"prod"}})},
			req:          req,
			wantDescribe: "nothing",
		},
		{
			name:         "a selector matching the namespace's labels grants",
			grants:       []backendsv1alpha1.OutputGrant{grant("g", backendsv1alpha1.OutputGrantSpec{To: selecting(map[string]string{"env": "prod"}), Outputs: []string{"vpc_id"}})},
			req:          req,
			wantGrants:   []string{"g"},
			wantAllowed:  []string{"vpc_id"},
			wantDescribe: "outputs vpc_id (OutputGrant g)",
		},
		{
			name:         "a selector the labels do not match grants nothing",
			grants:       []backendsv1alpha1.OutputGrant{grant("g", backendsv1alpha1.OutputGrantSpec{To: selecting(map[string]string{"env": "staging"})})},
			req:          req,
			wantDescribe: "nothing",
		},
		{
			name: "with the labels unknown, not even an empty selector matches, and a grant by name still grants",
			grants: []backendsv1alpha1.OutputGrant{
				grant("everyone", backendsv1alpha1.OutputGrantSpec{To: []backendsv1alpha1.GrantConsumer{{NamespaceSelector: &metav1.LabelSelector{}}}}),
				grant("named", backendsv1alpha1.OutputGrantSpec{To: to("app"), Outputs: []string{"subnets"}}),
			},
			req:          Request{Consumer: "app", LabelsUnknown: true, Backend: network, Workspace: "default"},
			wantGrants:   []string{"named"},
			wantAllowed:  []string{"subnets"},
			wantDescribe: "outputs subnets (OutputGrant named)",
		},
		{
			name:         "an empty selector matches every namespace whose labels are known",
			grants:       []backendsv1alpha1.OutputGrant{grant("everyone", backendsv1alpha1.OutputGrantSpec{To: []backendsv1alpha1.GrantConsumer{{NamespaceSelector: &metav1.LabelSelector{}}}})},
			req:          Request{Consumer: "app", Backend: network, Workspace: "default"},
			wantGrants:   []string{"everyone"},
			wantAllowed:  []string{"vpc_id", "subnets"},
			wantDescribe: "every non-sensitive output (OutputGrant everyone)",
		},
		{
			name:         "a grant being deleted grants nothing",
			grants:       []backendsv1alpha1.OutputGrant{deleted},
			req:          req,
			wantDescribe: "nothing",
		},
		{
			name:         "a selector that does not parse matches nothing",
			grants:       []backendsv1alpha1.OutputGrant{badSelector},
			req:          req,
			wantDescribe: "nothing",
		},
		{
			name: "named sensitive outputs add to every non-sensitive one",
			grants: []backendsv1alpha1.OutputGrant{grant("g", backendsv1alpha1.OutputGrantSpec{To: to("app"),
				Outputs: []string{}, SensitiveOutputs: []string{"db_password"}})},
			req:          req,
			wantGrants:   []string{"g"},
			wantAllowed:  []string{"vpc_id", "subnets", "db_password"},
			wantDescribe: "every non-sensitive output and sensitive outputs db_password (OutputGrant g)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.grants, tt.req)
			if diff := cmp.Diff(tt.wantGrants, d.Grants); diff != "" {
				t.Errorf("covering grants (-want +got):\n%s", diff)
			}
			var allowed []string
			for _, o := range state {
				if d.Allows(o.name, o.sensitive) {
					allowed = append(allowed, o.name)
				}
			}
			if diff := cmp.Diff(tt.wantAllowed, allowed); diff != "" {
				t.Errorf("outputs allowed (-want +got):\n%s", diff)
			}
			if got := d.Describe(); got != tt.wantDescribe {
				t.Errorf("Describe() = %q, want %q", got, tt.wantDescribe)
			}
			if d.Granted() != (len(tt.wantGrants) > 0) {
				t.Errorf("Granted() = %t with grants %v", d.Granted(), d.Grants)
			}
		})
	}
}

func TestNamesAndMayName(t *testing.T) {
	req := Request{Consumer: "app", Backend: network, Workspace: "default"}
	named := Decide([]backendsv1alpha1.OutputGrant{grant("g", backendsv1alpha1.OutputGrantSpec{To: to("app"),
		Outputs: []string{"vpc_id"}, SensitiveOutputs: []string{"token"}})}, req)
	if diff := cmp.Diff(map[string]bool{"vpc_id": true, "token": true}, named.Names()); diff != "" {
		t.Errorf("Names() of named outputs (-want +got):\n%s", diff)
	}
	if !named.MayName("token") || !named.MayName("vpc_id") || named.MayName("subnets") {
		t.Errorf("MayName: token %t, vpc_id %t, subnets %t; want the first two only", named.MayName("token"), named.MayName("vpc_id"), named.MayName("subnets"))
	}
	every := Decide([]backendsv1alpha1.OutputGrant{grant("g", backendsv1alpha1.OutputGrantSpec{To: to("app")})}, req)
	if every.Names() != nil || !every.MayName("anything") {
		t.Errorf("a grant of every non-sensitive output: Names() = %v, MayName(anything) = %t; want nil, true", every.Names(), every.MayName("anything"))
	}
	if none := Decide(nil, req); none.MayName("vpc_id") || len(none.Names()) != 0 {
		t.Errorf("no grant: MayName(vpc_id) = %t, Names() = %v; want false and none", none.MayName("vpc_id"), none.Names())
	}
}

func TestInvalidSelectors(t *testing.T) {
	got := InvalidSelectors([]backendsv1alpha1.GrantConsumer{
		{Namespace: "app"},
		{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "app"}}},
		{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Sometimes"}}}},
	})
	if len(got) != 1 || got[0][:len("spec.to[2].namespaceSelector: ")] != "spec.to[2].namespaceSelector: " {
		t.Errorf("InvalidSelectors() = %q, want one message about spec.to[2]", got)
	}
}
