package main

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// storedSizeNote says how large the last backend of a batch is once
// Ready, as JSON with its managed fields and status: what each status
// patch of it costs the API server grows with it, so a floor row and a
// manager row compare only when their objects are alike. It reads one
// object; an error becomes the note.
func (h *harness) storedSizeNote(ctx context.Context, backends []types.NamespacedName) string {
	if len(backends) == 0 {
		return "stored object: no backend"
	}
	b := &backendsv1alpha1.HttpBackend{}
	if err := h.client.Get(ctx, backends[len(backends)-1], b); err != nil {
		return fmt.Sprintf("stored object: %v", err)
	}
	return storedSize(b)
}

// storedSize is storedSizeNote's text for b.
func storedSize(b *backendsv1alpha1.HttpBackend) string {
	all, err := json.Marshal(b)
	if err != nil {
		return fmt.Sprintf("stored object: %v", err)
	}
	status, err := json.Marshal(b.Status)
	if err != nil {
		return fmt.Sprintf("stored object: %v", err)
	}
	managed, err := json.Marshal(b.ManagedFields)
	if err != nil {
		return fmt.Sprintf("stored object: %v", err)
	}
	return fmt.Sprintf("stored object %d B (status %d, managed fields %d)", len(all), len(status), len(managed))
}
