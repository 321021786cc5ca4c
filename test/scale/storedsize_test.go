package main

import (
	"encoding/json"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

func TestStoredSize(t *testing.T) {
	bare := &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	full := bare.DeepCopy()
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "backend-operator", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"}}
	full.Status.Locked = "Unchecked"
	full.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "m"}}
	size := func(v any) int {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return len(data)
	}
	cases := []struct {
		name string
		b    *backendsv1alpha1.HttpBackend
	}{
		{name: "no status, no managed fields", b: bare},
		{name: "status and managed fields", b: full},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := fmt.Sprintf("stored object %d B (status %d, managed fields %d)", size(tc.b), size(tc.b.Status), size(tc.b.ManagedFields))
			if got := storedSize(tc.b); got != want {
				t.Errorf("storedSize = %q, want %q", got, want)
			}
		})
	}
	if storedSize(full) == storedSize(bare) {
		t.Errorf("storedSize does not tell a larger object from a smaller one: %q", storedSize(full))
	}
}
