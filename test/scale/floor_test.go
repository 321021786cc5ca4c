package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/contenthash"
	"github.com/infrastate/backend-operator/internal/render"
)

func TestFloorObjects(t *testing.T) {
	b := newBackend(types.NamespacedName{Namespace: "ns", Name: "hb-00001"}, "http://127.0.0.1:9")
	b.UID = "uid-1"
	cm, secret, runners, err := floorObjects(b, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := render.HTTPFiles(b.Spec)
	if err != nil {
		t.Fatal(err)
	}
	owner := []metav1.OwnerReference{{
		APIVersion: "backends.infrastate.io/v1alpha1", Kind: "HttpBackend", Name: "hb-00001", UID: "uid-1",
		Controller: new(true), BlockOwnerDeletion: new(true),
	}}
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return "sha256:" + hex.EncodeToString(h[:]) }

	wantSecret := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "hb-00001-backend-credentials", OwnerReferences: owner,
			Labels:      map[string]string{render.ManagedByLabel: render.ManagedByValue, render.BackendLabel: "hb-00001"},
			Annotations: map[string]string{contenthash.Annotation: sum("16:TF_HTTP_PASSWORD2:pw")},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"TF_HTTP_PASSWORD": []byte("pw")},
	}
	if diff := cmp.Diff(wantSecret, secret); diff != "" {
		t.Errorf("credentials Secret mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(files.Data(), cm.Data); diff != "" {
		t.Errorf("ConfigMap data mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(render.Compatible(files.Needs), runners); diff != "" || len(runners) == 0 {
		t.Errorf("compatible runners mismatch (-want +got):\n%s", diff)
	}
	if cm.Name != "hb-00001-backend" || cm.Namespace != "ns" {
		t.Errorf("ConfigMap is %s/%s, want ns/hb-00001-backend", cm.Namespace, cm.Name)
	}
	if diff := cmp.Diff(owner, cm.OwnerReferences); diff != "" {
		t.Errorf("ConfigMap owner mismatch (-want +got):\n%s", diff)
	}
	if got, want := cm.Annotations[contenthash.Annotation], contenthash.ConfigMap(files.Data(), nil); got != want || len(got) != len("sha256:")+64 {
		t.Errorf("ConfigMap content hash = %q, want %q", got, want)
	}
}

// operatorStatus is the status the operator stored for a new HttpBackend
// without probe.lockCheck whose state is absent (read from a scale run's
// API server at generation 1, names replaced): the floor writes the same.
const operatorStatus = `{
 "conditions": [
  {"lastTransitionTime": "2026-01-02T03:04:05Z", "message": "The lock is not checked, and no StateLock holds it: spec.probe.lockCheck is off, and the REST protocol shows a lock's holder only to a lock attempt. Set probe.lockCheck to true (with lockAddress and unlockAddress) to see every holder.", "observedGeneration": 3, "reason": "LockNotChecked", "status": "Unknown", "type": "Locked"},
  {"lastTransitionTime": "2026-01-02T03:04:05Z", "message": "The backend answers; it holds no state yet", "observedGeneration": 3, "reason": "Reachable", "status": "True", "type": "StateReachable"},
  {"lastTransitionTime": "2026-01-02T03:04:05Z", "message": "Rendered ConfigMap b-backend and Secret b-backend-credentials", "observedGeneration": 3, "reason": "Succeeded", "status": "True", "type": "Ready"}
 ],
 "locked": "Unchecked",
 "observedGeneration": 3,
 "rendered": {
  "compatibleRunners": [{"flavor": "terraform", "versions": ">= 1.0.0"}, {"flavor": "opentofu", "versions": ">= 1.6.0"}],
  "configMapName": "b-backend",
  "secretName": "b-backend-credentials"
 },
 "state": {"present": false}
}`

func TestFloorStatusPatch(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	runners := []backendsv1alpha1.CompatibleRunner{{Flavor: "terraform", Versions: ">= 1.0.0"}, {Flavor: "opentofu", Versions: ">= 1.6.0"}}
	rendered := backendsv1alpha1.RenderedObjects{CompatibleRunners: runners, ConfigMapName: "b-backend", SecretName: "b-backend-credentials"}
	var absent map[string]any
	if err := json.Unmarshal([]byte(operatorStatus), &absent); err != nil {
		t.Fatal(err)
	}
	present := map[string]any{}
	if err := json.Unmarshal([]byte(operatorStatus), &present); err != nil {
		t.Fatal(err)
	}
	present["state"] = map[string]any{"present": true, "serial": 7.0, "lineage": "l-1", "terraformVersion": "1.9.0", "sizeBytes": 120.0, "outputCount": 2.0}
	present["conditions"].([]any)[1].(map[string]any)["message"] = "The backend answers; state serial 7, lineage l-1"

	cases := []struct {
		name  string
		state *backendsv1alpha1.StateSummary
		want  map[string]any
	}{
		{name: "no state: the operator's status, byte for byte", state: &backendsv1alpha1.StateSummary{}, want: absent},
		{
			name:  "a state: its summary and serial",
			state: &backendsv1alpha1.StateSummary{Present: true, Serial: 7, Lineage: "l-1", TerraformVersion: "1.9.0", SizeBytes: 120, OutputCount: 2},
			want:  present,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 3}}
			patch, err := floorStatusPatch(b, rendered, tc.state, now)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]map[string]any
			if err := json.Unmarshal(patch, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got["status"]); diff != "" {
				t.Errorf("floorStatusPatch mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFloorProbe(t *testing.T) {
	state := []byte(`{"version":4,"terraform_version":"1.9.0","serial":7,"lineage":"l-1","outputs":{"a":{"value":1,"type":"number"},"b":{"value":"x","type":"string"}},"resources":[]}`)
	cases := []struct {
		name    string
		code    int
		body    []byte
		want    *backendsv1alpha1.StateSummary
		wantErr bool
	}{
		{name: "404 is no state", code: http.StatusNotFound, want: &backendsv1alpha1.StateSummary{}},
		{name: "204 is no state", code: http.StatusNoContent, want: &backendsv1alpha1.StateSummary{}},
		{name: "an empty 200 is no state", code: http.StatusOK, want: &backendsv1alpha1.StateSummary{}},
		{
			name: "a 200 with a state is its summary", code: http.StatusOK, body: state,
			want: &backendsv1alpha1.StateSummary{Present: true, Serial: 7, Lineage: "l-1", TerraformVersion: "1.9.0", SizeBytes: int64(len(state)), OutputCount: 2},
		},
		{name: "a 200 that is no state is an error", code: http.StatusOK, body: []byte("<html>"), wantErr: true},
		{name: "401 is an error", code: http.StatusUnauthorized, wantErr: true},
		{name: "500 is an error, not retried", code: http.StatusInternalServerError, body: []byte("boom"), wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int32
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				if user, password, ok := r.BasicAuth(); r.Method != http.MethodGet || !ok || user != stateUser || password != "pw" {
					http.Error(w, "want a GET with the backend's credentials", http.StatusBadRequest)
					return
				}
				w.WriteHeader(tc.code)
				_, _ = w.Write(tc.body)
			}))
			defer server.Close()
			b := newBackend(types.NamespacedName{Namespace: "ns", Name: "hb-00001"}, server.URL+"/state/ns-hb-00001")
			got, err := floorProbe(t.Context(), http.DefaultTransport.(*http.Transport).Clone(), b, []byte("pw"))
			if (err != nil) != tc.wantErr {
				t.Fatalf("floorProbe error = %v, want an error: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("floorProbe mismatch (-want +got):\n%s", diff)
			}
			if n := requests.Load(); n != 1 {
				t.Errorf("the state server got %d requests, want 1", n)
			}
		})
	}
}

func TestIsReady(t *testing.T) {
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue}
	cases := map[string]struct {
		generation, observed int64
		conditions           []metav1.Condition
		want                 bool
	}{
		"ready at the generation": {generation: 2, observed: 2, conditions: []metav1.Condition{ready}, want: true},
		"ready at an older one":   {generation: 2, observed: 1, conditions: []metav1.Condition{ready}},
		"not ready":               {generation: 1, observed: 1, conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse}}},
		"new":                     {generation: 1, observed: -1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Generation: tc.generation}}
			b.Status.ObservedGeneration = tc.observed
			b.Status.Conditions = tc.conditions
			if got := isReady(b); got != tc.want {
				t.Errorf("isReady = %v, want %v", got, tc.want)
			}
		})
	}
}
