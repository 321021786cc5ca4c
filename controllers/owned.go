package controllers

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// ownedWriter creates and updates the objects a backend renders. It reads
// the current object straight from the API server and writes only when the
// content differs, so a resync with nothing new performs no write.
type ownedWriter struct {
	client client.Client
	reader client.Reader
}

// applyConfigMap makes the ConfigMap match desired: data, labels and the
// controller reference. It refuses to touch a ConfigMap another owner
// controls, and reports whether it wrote.
func (w ownedWriter) applyConfigMap(ctx context.Context, desired *corev1.ConfigMap) (bool, error) {
	current := &corev1.ConfigMap{}
	return w.apply(ctx, "ConfigMap", desired, current, func() bool {
		return apiequality.Semantic.DeepEqual(current.Data, desired.Data) && len(current.BinaryData) == 0
	}, func() {
		current.Data = desired.Data
		current.BinaryData = nil
	})
}

// applySecret makes the Secret match desired, as applyConfigMap does.
func (w ownedWriter) applySecret(ctx context.Context, desired *corev1.Secret) (bool, error) {
	current := &corev1.Secret{}
	return w.apply(ctx, "Secret", desired, current, func() bool {
		return secretDataEqual(current.Data, desired.Data) && len(current.StringData) == 0
	}, func() {
		current.Data = desired.Data
	})
}

// apply is the shared create-or-patch of applyConfigMap and applySecret.
// sameData compares the contents of current and desired; copyData copies
// desired's contents into current.
func (w ownedWriter) apply(ctx context.Context, kind string, desired, current client.Object, sameData func() bool, copyData func()) (bool, error) {
	key := client.ObjectKeyFromObject(desired)
	err := w.reader.Get(ctx, key, current)
	if apierrors.IsNotFound(err) {
		if err := w.client.Create(ctx, desired); err != nil {
			return false, fmt.Errorf("creating %s %s: %w", kind, key, err)
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s %s: %w", kind, key, err)
	}

	owner := metav1.GetControllerOf(desired)
	if ref := metav1.GetControllerOf(current); ref == nil || ref.UID != owner.UID {
		return false, stall(backendsv1alpha1.NameConflictReason,
			"%s %s already exists and is not controlled by %s %s: choose another name or delete it", kind, key, owner.Kind, owner.Name)
	}
	if sameData() && labelsInclude(current.GetLabels(), desired.GetLabels()) {
		return false, nil
	}

	patch := client.MergeFrom(current.DeepCopyObject().(client.Object))
	copyData()
	labels := maps.Clone(current.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, desired.GetLabels())
	current.SetLabels(labels)
	if err := w.client.Patch(ctx, current, patch); err != nil {
		return false, fmt.Errorf("updating %s %s: %w", kind, key, err)
	}
	return true, nil
}

// deleteIfOwned deletes a ConfigMap or Secret that the owner controls, for
// objects left behind when the user renames configMapName.
func (w ownedWriter) deleteIfOwned(ctx context.Context, obj client.Object, key types.NamespacedName, owner types.UID) error {
	if err := w.reader.Get(ctx, key, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if ref := metav1.GetControllerOf(obj); ref == nil || ref.UID != owner {
		return nil
	}
	if err := w.client.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())}); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}

// labelsInclude reports whether every label of want is set in have.
func labelsInclude(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// secretDataEqual compares Secret data, treating nil and empty alike.
func secretDataEqual(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || string(v) != string(w) {
			return false
		}
	}
	return true
}
