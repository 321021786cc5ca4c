package controllers

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/grants"
)

// grantTo is an OutputGrant of namespace "network" to namespace "app" of
// the outputs and sensitive outputs named.
func grantTo(outputs, sensitive []string) backendsv1alpha1.OutputGrant {
	return backendsv1alpha1.OutputGrant{
		ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "network"},
		Spec: backendsv1alpha1.OutputGrantSpec{To: []backendsv1alpha1.GrantConsumer{{Namespace: "app"}},
			Outputs: outputs, SensitiveOutputs: sensitive},
	}
}

// appRequest is the request of a RemoteState of namespace "app" reading
// HttpBackend vpc of namespace "network".
var appRequest = grants.Request{Consumer: "app", Backend: backendsv1alpha1.BackendReference{Kind: "HttpBackend", Name: "vpc"}, Workspace: "default"}

func TestRevocation(t *testing.T) {
	published := []backendsv1alpha1.OutputStatus{
		{Name: "vpc_id", Key: "VPC_ID", Type: `"string"`},
		{Name: "subnets", Key: "subnets", Type: `["list","string"]`},
		{Name: "region", Key: "region", Type: "default"},
		{Name: "db_password", Key: "db_password", Type: `"string"`, Sensitive: true},
	}
	plain := map[string]string{"VPC_ID": "vpc-1", "subnets": `["a"]`, "region": "eu", "unlisted": "x"}
	sensitive := map[string][]byte{"db_password": []byte("pw"), "token": []byte("t")}
	cases := map[string]struct {
		decision grants.Decision
		listed   bool
		// wantRemoved are the names removed; wantPlain and wantSensitive
		// the keys left.
		wantRemoved   []string
		wantPlain     []string
		wantSensitive []string
		wantNeeded    bool
	}{
		"nothing granted: both objects left empty": {
			decision:    grants.Decision{},
			listed:      true,
			wantRemoved: []string{"vpc_id", "subnets", "region", "db_password"},
			wantPlain:   []string{}, wantSensitive: []string{}, wantNeeded: true,
		},
		"still every plain output and the sensitive one: nothing to do": {
			decision:   grants.Decide([]backendsv1alpha1.OutputGrant{grantTo(nil, []string{"db_password"})}, appRequest),
			listed:     true,
			wantNeeded: false,
			// keep would leave what status lists, and judge the rest by name
			wantPlain: []string{"VPC_ID", "region", "subnets", "unlisted"}, wantSensitive: []string{"db_password"},
		},
		"narrowed to one output: the others go, whatever their key": {
			decision:    grants.Decide([]backendsv1alpha1.OutputGrant{grantTo([]string{"vpc_id"}, nil)}, appRequest),
			listed:      true,
			wantRemoved: []string{"subnets", "region", "db_password"},
			wantPlain:   []string{"VPC_ID"}, wantSensitive: []string{}, wantNeeded: true,
		},
		"a sensitive output granted as a plain one only goes": {
			decision:    grants.Decide([]backendsv1alpha1.OutputGrant{grantTo(nil, nil)}, appRequest),
			listed:      true,
			wantRemoved: []string{"db_password"},
			wantPlain:   []string{"VPC_ID", "region", "subnets", "unlisted"}, wantSensitive: []string{}, wantNeeded: true,
		},
		"status lists only the first outputs: unlisted keys are judged by name": {
			decision:    grants.Decide([]backendsv1alpha1.OutputGrant{grantTo([]string{"vpc_id", "subnets", "region"}, []string{"db_password"})}, appRequest),
			listed:      false,
			wantRemoved: nil,
			wantPlain:   []string{"VPC_ID", "region", "subnets"}, wantSensitive: []string{"db_password"}, wantNeeded: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := revocationOf(published, tc.listed, tc.decision)
			var removed []string
			for _, o := range v.removed {
				removed = append(removed, o.Name)
			}
			if diff := cmp.Diff(tc.wantRemoved, removed); diff != "" {
				t.Errorf("removed (-want +got):\n%s", diff)
			}
			if v.needed() != tc.wantNeeded {
				t.Errorf("needed() = %t, want %t", v.needed(), tc.wantNeeded)
			}
			if len(v.kept)+len(v.removed) != len(published) {
				t.Errorf("kept %d and removed %d of %d outputs", len(v.kept), len(v.removed), len(published))
			}
			if diff := cmp.Diff(tc.wantPlain, sortedKeys(v.plain(plain))); diff != "" {
				t.Errorf("ConfigMap keys left (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSensitive, sortedKeys(v.sensitive(sensitive))); diff != "" {
				t.Errorf("Secret keys left (-want +got):\n%s", diff)
			}
		})
	}
}

// sortedKeys are the keys of m, sorted; empty, not nil, when it has none.
func sortedKeys[V any](m map[string]V) []string {
	keys := []string{}
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestGrantMessages(t *testing.T) {
	cases := map[string]struct {
		got, want string
	}{
		"not granted: the request only, whether or not the backend exists": {
			got: notGrantedMessage("network", appRequest),
			want: "No OutputGrant of namespace network grants HttpBackend vpc (workspace default) to namespace app: " +
				"its owners grant it with an OutputGrant in network (docs/sharing.md)",
		},
		"selected outputs no grant names": {
			got: ungrantedSelectionsMessage("network", appRequest, []string{"subnets"},
				grants.Decide([]backendsv1alpha1.OutputGrant{grantTo([]string{"vpc_id"}, nil)}, appRequest)),
			want: "Namespace network grants HttpBackend vpc (workspace default) to namespace app, but not outputs subnets, which spec.outputs selects: " +
				"it grants outputs vpc_id (OutputGrant g). Ask its owners to add them to the OutputGrant, or leave them out of spec.outputs",
		},
		"removed outputs, by key and object, never a value": {
			got: revokedMessage("network", []backendsv1alpha1.OutputStatus{
				{Name: "vpc_id", Key: "VPC_ID"}, {Name: "db_password", Key: "db_password", Sensitive: true}, {Name: "azs", Key: "azs"},
			}, "net-outputs", "net-secrets"),
			want: "Removed keys VPC_ID, azs from ConfigMap net-outputs and keys db_password from Secret net-secrets: " +
				"the OutputGrants of namespace network no longer grant them",
		},
		"not watched": {
			got: notWatchedMessage("network"),
			want: "The manager does not watch namespace network (--watch-namespaces), so it cannot read its OutputGrants: " +
				"read a backend of a namespace it watches, or have it watch network",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("message:\n got %q\nwant %q", tc.got, tc.want)
			}
		})
	}
}

func TestUngrantedSelections(t *testing.T) {
	d := grants.Decide([]backendsv1alpha1.OutputGrant{grantTo([]string{"vpc_id"}, []string{"token"})}, appRequest)
	selectors := []backendsv1alpha1.OutputSelector{{Name: "subnets"}, {Name: "vpc_id", Key: "VPC"}, {Name: "token"}, {Name: "azs"}}
	if diff := cmp.Diff([]string{"subnets", "azs"}, ungrantedSelections(selectors, d)); diff != "" {
		t.Errorf("ungrantedSelections (-want +got):\n%s", diff)
	}
	every := grants.Decide([]backendsv1alpha1.OutputGrant{grantTo(nil, nil)}, appRequest)
	if got := ungrantedSelections(selectors, every); got != nil {
		t.Errorf("a grant of every plain output refuses selections %v", got)
	}
}

func TestGrantInputsChangeWithTheDecision(t *testing.T) {
	wide := grants.Decide([]backendsv1alpha1.OutputGrant{grantTo(nil, []string{"token"})}, appRequest)
	narrow := grants.Decide([]backendsv1alpha1.OutputGrant{grantTo([]string{"vpc_id"}, nil)}, appRequest)
	again := grants.Decide([]backendsv1alpha1.OutputGrant{grantTo([]string{"vpc_id"}, nil)}, appRequest)
	if fingerprint(grantInputs(&wide)...) == fingerprint(grantInputs(&narrow)...) {
		t.Error("a narrowed grant gives the same fingerprint: the read it makes due would wait for the interval")
	}
	if fingerprint(grantInputs(&narrow)...) != fingerprint(grantInputs(&again)...) {
		t.Error("the same decision gives another fingerprint: every reconcile would read the state again")
	}
	if grantInputs(nil) != nil {
		t.Error("a RemoteState of its own namespace gets grant inputs")
	}
}

func TestGrantedStateTellsNothingOfOtherOutputs(t *testing.T) {
	state := &backendsv1alpha1.StateSummary{Present: true, Serial: 4, Lineage: "l", TerraformVersion: "1.5.7", SizeBytes: 9000, OutputCount: 12, Encrypted: true}
	want := backendsv1alpha1.StateSummary{Present: true, Serial: 4, Lineage: "l", TerraformVersion: "1.5.7", Encrypted: true}
	if diff := cmp.Diff(&want, grantedState(state)); diff != "" {
		t.Errorf("grantedState (-want +got):\n%s", diff)
	}
	if state.OutputCount != 12 {
		t.Error("grantedState changed its argument")
	}
}

func TestFailureElsewhere(t *testing.T) {
	ref := backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.HttpBackendKind, Name: "network"}
	server := "https://state.team-a.internal:8443/states/network"
	tests := []struct {
		name     string
		obs      conditions.Observation
		producer string
		want     string
	}{
		{
			name: "the server's answer is the producer's business",
			obs: conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.UnauthorizedReason,
				Message: "GET " + server + " answered 401: check Secret state-credentials key password"},
			producer: "team-a",
			want:     "Reading the state of HttpBackend network of namespace team-a failed (Unauthorized): its owners see why in its status, and the outputs published last stay",
		},
		{
			name: "so are the passphrases",
			obs: conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.DecryptionFailedReason,
				Message: `The state is encrypted and spec.encryption of the backend cannot decrypt it: key provider "team_a_pass_key" failed`},
			producer: "team-a",
			want:     "Reading the state of HttpBackend network of namespace team-a failed (DecryptionFailed): its owners see why in its status, and the outputs published last stay",
		},
		{
			name: "the reader's own selection is its business",
			obs: conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.OutputMissingReason,
				Message: `Output "vpc_id" is not in the state and spec.defaults has no value for it`},
			producer: "team-a",
			want:     `Output "vpc_id" is not in the state and spec.defaults has no value for it`,
		},
		{
			name: "a backend of the reader's own namespace says everything",
			obs: conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.UnauthorizedReason,
				Message: "GET " + server + " answered 401"},
			want: "GET " + server + " answered 401",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := failureElsewhere(tt.obs, tt.producer, ref)
			if got.Message != tt.want || got.Reason != tt.obs.Reason || got.Status != tt.obs.Status {
				t.Errorf("failureElsewhere() = %s %s %q, want %s %s %q", got.Status, got.Reason, got.Message, tt.obs.Status, tt.obs.Reason, tt.want)
			}
		})
	}
}
