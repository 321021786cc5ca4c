package controllers

import (
	"context"
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// patchedHttpBackend returns the HttpBackend a merge patch of obj (a
// status patch sends the object's metadata alone, see patchStatus) would
// store: the one c holds with patch applied.
func patchedHttpBackend(ctx context.Context, c client.Client, obj client.Object, patch client.Patch) (*backendsv1alpha1.HttpBackend, error) {
	current := &backendsv1alpha1.HttpBackend{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), current); err != nil {
		return nil, fmt.Errorf("reading the patched object: %w", err)
	}
	data, err := patch.Data(obj)
	if err != nil {
		return nil, fmt.Errorf("reading the patch: %w", err)
	}
	from, err := json.Marshal(current)
	if err != nil {
		return nil, err
	}
	to, err := jsonpatch.MergePatch(from, data)
	if err != nil {
		return nil, fmt.Errorf("applying the patch: %w", err)
	}
	patched := &backendsv1alpha1.HttpBackend{}
	if err := json.Unmarshal(to, patched); err != nil {
		return nil, err
	}
	return patched, nil
}
