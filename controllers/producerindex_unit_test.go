package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

func TestRemoteStateBackendIndexes(t *testing.T) {
	tests := []struct {
		name         string
		rs           *backendsv1alpha1.RemoteState
		wantLocal    []string
		wantProducer []string
	}{
		{
			name:      "a backend of its own namespace",
			rs:        builders.MakeRemoteState("app", "team-b", backendsv1alpha1.HttpBackendKind, "network").Obj(),
			wantLocal: []string{"HttpBackend/network"},
		},
		{
			name:      "its own namespace named",
			rs:        builders.MakeRemoteState("app", "team-b", backendsv1alpha1.HttpBackendKind, "network").FromNamespace("team-b").Obj(),
			wantLocal: []string{"HttpBackend/network"},
		},
		{
			name:         "a backend of another namespace",
			rs:           builders.MakeRemoteState("app", "team-b", backendsv1alpha1.CosBackendKind, "network").FromNamespace("team-a").Obj(),
			wantProducer: []string{"team-a", "team-a/CosBackend/network"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.wantLocal, remoteStateBackend(tt.rs)); diff != "" {
				t.Errorf("backendRefIndex (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantProducer, remoteStateProducer(tt.rs)); diff != "" {
				t.Errorf("producerIndex (-want +got):\n%s", diff)
			}
		})
	}
}
