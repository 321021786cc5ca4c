package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	cm, secret, err := floorObjects(b, []byte("pw"))
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

func TestFloorStatusPatch(t *testing.T) {
	b := &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 3}}
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	patch, err := floorStatusPatch(b, "b-backend", "b-backend-credentials", now)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(patch, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"status": map[string]any{
		"observedGeneration": 3.0,
		"conditions": []any{
			map[string]any{
				"type": "Ready", "status": "True", "reason": "Succeeded", "observedGeneration": 3.0,
				"message": "Rendered ConfigMap b-backend and Secret b-backend-credentials", "lastTransitionTime": "2026-01-02T03:04:05Z",
			},
			map[string]any{
				"type": "StateReachable", "status": "True", "reason": "Reachable", "observedGeneration": 3.0,
				"message": "Not probed: the floor never probes", "lastTransitionTime": "2026-01-02T03:04:05Z",
			},
		},
		"rendered": map[string]any{"configMapName": "b-backend", "secretName": "b-backend-credentials"},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("floorStatusPatch mismatch (-want +got):\n%s", diff)
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
