package controllers

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/nslabels"
	"github.com/infrastate/backend-operator/internal/outputs"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// fixedLabels are the labels of namespaces, by name; unknown lists the
// namespaces whose labels cannot be read.
type fixedLabels struct {
	labels  map[string]map[string]string
	unknown error
}

func (f fixedLabels) Labels(namespace string) (map[string]string, error) {
	if f.unknown != nil {
		return nil, f.unknown
	}
	return f.labels[namespace], nil
}

// errNotAllowed is the error of a manager that may not watch namespaces.
var errNotAllowed = fmt.Errorf("%w: %w", nslabels.ErrUnknown, nslabels.ErrNotAllowed)

// reading is a RemoteState of namespace reading the HttpBackend backend
// of producer, which published outputs (name, and "!" first for a
// sensitive one).
func reading(namespace, name, producer, backend string, published ...string) backendsv1alpha1.RemoteState {
	rs := builders.MakeRemoteState(name, namespace, backendsv1alpha1.HttpBackendKind, backend).FromNamespace(producer).Obj()
	for _, o := range published {
		sensitive := o[0] == '!'
		if sensitive {
			o = o[1:]
		}
		rs.Status.Outputs = append(rs.Status.Outputs, backendsv1alpha1.OutputStatus{Name: o, Key: o, Type: "string", Sensitive: sensitive})
	}
	return *rs
}

func TestGrantConsumers(t *testing.T) {
	const hb = backendsv1alpha1.HttpBackendKind
	network := backendsv1alpha1.BackendReference{Kind: hb, Name: "network"}
	byName := func(spec backendsv1alpha1.OutputGrantSpec) *backendsv1alpha1.OutputGrant {
		return &backendsv1alpha1.OutputGrant{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "team-a"}, Spec: spec}
	}
	labels := fixedLabels{labels: map[string]map[string]string{"team-b": {"outputs": "network"}, "team-c": {"outputs": "none"}}}
	withDefault := reading("team-b", "defaulted", "team-a", "network", "vpc_id")
	withDefault.Status.Outputs = append(withDefault.Status.Outputs, backendsv1alpha1.OutputStatus{Name: "region", Key: "region", Type: outputs.DefaultType})
	leaving := reading("team-b", "leaving", "team-a", "network", "vpc_id")
	leaving.DeletionTimestamp = new(metav1.Now())
	many := make([]backendsv1alpha1.RemoteState, 0, 300)
	for i := range 300 {
		many = append(many, reading("team-b", fmt.Sprintf("rs-%03d", 299-i), "team-a", "network"))
	}

	cases := map[string]struct {
		grant      *backendsv1alpha1.OutputGrant
		candidates []backendsv1alpha1.RemoteState
		labels     namespaceLabeler
		want       []backendsv1alpha1.GrantConsumerStatus
		wantCount  int32
		wantErr    error
	}{
		"the RemoteStates it covers, sorted, with the outputs it grants among those they published": {
			grant: byName(backendsv1alpha1.OutputGrantSpec{To: []backendsv1alpha1.GrantConsumer{{Namespace: "team-b"}, {Namespace: "team-c"}},
				Outputs: []string{"vpc_id", "subnet_ids"}, SensitiveOutputs: []string{"db_password"}}),
			candidates: []backendsv1alpha1.RemoteState{
				reading("team-c", "app", "team-a", "network", "vpc_id"),
				reading("team-b", "web", "team-a", "network", "vpc_id", "subnet_ids", "!db_password", "!api_token", "zone"),
				reading("team-b", "api", "team-a", "network"),
			},
			labels: labels,
			want: []backendsv1alpha1.GrantConsumerStatus{
				{Namespace: "team-b", Name: "api", Backend: network},
				{Namespace: "team-b", Name: "web", Backend: network, Outputs: []string{"db_password", "subnet_ids", "vpc_id"}},
				{Namespace: "team-c", Name: "app", Backend: network, Outputs: []string{"vpc_id"}},
			},
			wantCount: 3,
		},
		"every non-sensitive output, never a sensitive one it does not name": {
			grant:      byName(backendsv1alpha1.OutputGrantSpec{To: []backendsv1alpha1.GrantConsumer{{Namespace: "team-b"}}}),
			candidates: []backendsv1alpha1.RemoteState{reading("team-b", "web", "team-a", "network", "vpc_id", "!db_password")},
			labels:     labels,
			want:       []backendsv1alpha1.GrantConsumerStatus{{Namespace: "team-b", Name: "web", Backend: network, Outputs: []string{"vpc_id"}}},
			wantCount:  1,
		},
		"not another namespace, backend or workspace, nor one being deleted, nor a default": {
			grant: byName(backendsv1alpha1.OutputGrantSpec{To: []backendsv1alpha1.GrantConsumer{{Namespace: "team-b"}},
				Backends: []backendsv1alpha1.BackendReference{network}, Workspaces: []string{"default"}}),
			candidates: []backendsv1alpha1.RemoteState{
				reading("team-c", "other-namespace", "team-a", "network", "vpc_id"),
				reading("team-b", "other-backend", "team-a", "dns", "vpc_id"),
				reading("team-b", "other-producer", "team-z", "network", "vpc_id"),
				*builders.MakeRemoteState("other-workspace", "team-b", hb, "network").FromNamespace("team-a").Workspace("prod").Obj(),
				leaving,
				withDefault,
			},
			labels:    labels,
			want:      []backendsv1alpha1.GrantConsumerStatus{{Namespace: "team-b", Name: "defaulted", Backend: network, Outputs: []string{"vpc_id"}}},
			wantCount: 1,
		},
		"a selector covers the namespaces whose labels it matches": {
			grant: byName(backendsv1alpha1.OutputGrantSpec{To: []backendsv1alpha1.GrantConsumer{
				{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"outputs": "network"}}}}}),
			candidates: []backendsv1alpha1.RemoteState{reading("team-b", "web", "team-a", "network"), reading("team-c", "app", "team-a", "network")},
			labels:     labels,
			want:       []backendsv1alpha1.GrantConsumerStatus{{Namespace: "team-b", Name: "web", Backend: network}},
			wantCount:  1,
		},
		"with the labels unknown, only names cover, and the error says why": {
			grant: byName(backendsv1alpha1.OutputGrantSpec{To: []backendsv1alpha1.GrantConsumer{
				{NamespaceSelector: &metav1.LabelSelector{}}, {Namespace: "team-c"}}}),
			candidates: []backendsv1alpha1.RemoteState{reading("team-b", "web", "team-a", "network"), reading("team-c", "app", "team-a", "network")},
			labels:     fixedLabels{unknown: errNotAllowed},
			want:       []backendsv1alpha1.GrantConsumerStatus{{Namespace: "team-c", Name: "app", Backend: network}},
			wantCount:  1,
			wantErr:    nslabels.ErrNotAllowed,
		},
		"the first 256 listed, all counted": {
			grant:      byName(backendsv1alpha1.OutputGrantSpec{To: []backendsv1alpha1.GrantConsumer{{Namespace: "team-b"}}}),
			candidates: many,
			labels:     labels,
			want: func() []backendsv1alpha1.GrantConsumerStatus {
				var out []backendsv1alpha1.GrantConsumerStatus
				for i := range maxListedConsumers {
					out = append(out, backendsv1alpha1.GrantConsumerStatus{Namespace: "team-b", Name: fmt.Sprintf("rs-%03d", i), Backend: network})
				}
				return out
			}(),
			wantCount: 300,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, count, err := grantConsumers(tc.grant, tc.candidates, tc.labels)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("consumers (-want +got):\n%s", diff)
			}
			if count != tc.wantCount {
				t.Errorf("count = %d, want %d", count, tc.wantCount)
			}
			if (tc.wantErr == nil) != (err == nil) || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Errorf("labels error = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestGrantReadyMessage(t *testing.T) {
	cases := map[string]struct {
		spec      backendsv1alpha1.OutputGrantSpec
		consumers int32
		want      string
	}{
		"everything": {
			want: "Grants every non-sensitive output of every backend to 0 RemoteStates",
		},
		"named outputs of named backends and workspaces": {
			spec: backendsv1alpha1.OutputGrantSpec{Outputs: []string{"vpc_id", "subnet_ids"}, SensitiveOutputs: []string{"db_password"},
				Backends:   []backendsv1alpha1.BackendReference{{Kind: backendsv1alpha1.HttpBackendKind, Name: "network"}},
				Workspaces: []string{"prod"}},
			consumers: 1,
			want:      "Grants outputs subnet_ids, vpc_id and sensitive outputs db_password of HttpBackend network (workspaces prod) to 1 RemoteState",
		},
		"many names are cut": {
			spec:      backendsv1alpha1.OutputGrantSpec{Outputs: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}},
			consumers: 2,
			want:      "Grants outputs a, b, c, d, e, f, g, h, i, j and 2 more of every backend to 2 RemoteStates",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := grantReadyMessage(tc.spec, tc.consumers); got != tc.want {
				t.Errorf("grantReadyMessage() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGrantNamespacesVerdict(t *testing.T) {
	named := func(namespaces ...string) []backendsv1alpha1.GrantConsumer {
		var to []backendsv1alpha1.GrantConsumer
		for _, ns := range namespaces {
			to = append(to, backendsv1alpha1.GrantConsumer{Namespace: ns})
		}
		return to
	}
	selector := backendsv1alpha1.GrantConsumer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"outputs": "network"}}}
	notWatched := func(msg string) *conditions.Observation {
		return &conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.NamespaceNotWatchedReason, Message: msg}
	}
	cases := map[string]struct {
		to        []backendsv1alpha1.GrantConsumer
		watched   []string
		labelsErr error
		want      *conditions.Observation
		wantNote  string
	}{
		"a manager watching every namespace serves every one": {
			to: append(named("team-b", "team-c"), selector),
		},
		"named namespaces it watches": {
			to: named("team-b"), watched: []string{"team-a", "team-b"},
		},
		"a named namespace it does not watch": {
			to: named("team-b", "team-c", "team-d", "team-c"), watched: []string{"team-a", "team-b"},
			want: notWatched("The manager watches only the namespaces team-a, team-b (--watch-namespaces): this grant cannot serve the RemoteStates of namespaces team-c, team-d, which spec.to names"),
		},
		"a selector can match the watched namespaces only": {
			to: append(named("team-b"), selector), watched: []string{"team-b", "team-a"},
			wantNote: "its namespace selectors can match only the namespaces the manager watches: team-a, team-b",
		},
		"a selector while the labels cannot be read": {
			to: []backendsv1alpha1.GrantConsumer{selector}, watched: []string{"team-a", "team-b"}, labelsErr: errNotAllowed,
			want: notWatched("The namespace selectors of spec.to match no namespace: the manager may not list and watch namespaces " +
				"(a ClusterRole allowing it to list and watch namespaces lets them match: docs/namespaced.md)"),
		},
		"unknown labels do not matter without a selector": {
			to: named("team-b"), watched: []string{"team-a", "team-b"}, labelsErr: errNotAllowed,
		},
		"both": {
			to: append(named("team-c"), selector), watched: []string{"team-a"}, labelsErr: fmt.Errorf("%w: %w", nslabels.ErrUnknown, errors.New("the namespaces are not listed yet")),
			want: notWatched("The manager watches only the namespaces team-a (--watch-namespaces): this grant cannot serve the RemoteStates of namespace team-c, which spec.to names. " +
				"The namespace selectors of spec.to match no namespace: the namespaces are not listed yet"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, note := grantNamespacesVerdict(tc.to, tc.watched, tc.labelsErr)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Ready (-want +got):\n%s", diff)
			}
			if note != tc.wantNote {
				t.Errorf("note = %q, want %q", note, tc.wantNote)
			}
		})
	}
}
