package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/render"
)

// ownedWriter creates and updates the objects a backend renders. It reads
// the current object straight from the API server and writes only when the
// content differs, so a resync with nothing new performs no write.
//
// Every object it writes carries contentHashAnnotation, the hash of the
// data it wrote. When an object's data no longer matches that hash,
// another writer changed it: the writer then stops writing it and stalls
// (ExternallyModified) instead of fighting over it, until the object is
// deleted (the next reconcile recreates it) or the spec moves elsewhere.
type ownedWriter struct {
	client client.Client
	reader client.Reader
	// metadata reads the metadata of watched objects from the manager's
	// cache (see reconciler).
	metadata client.Reader
}

// fieldOwner is the field manager of every write of the operator.
const fieldOwner = client.FieldOwner("backend-operator")

// contentHashAnnotation holds the hash of the data the operator last wrote
// into a rendered or published object.
const contentHashAnnotation = "backends.infrastate.io/content-hash"

// applyConfigMap makes the ConfigMap match desired: data, labels and the
// controller reference. It refuses to touch a ConfigMap another owner
// controls or another writer changed, and reports whether it wrote.
func (w ownedWriter) applyConfigMap(ctx context.Context, desired *corev1.ConfigMap) (bool, error) {
	current := &corev1.ConfigMap{}
	setContentHash(desired, configMapHash(desired.Data, nil))
	return w.apply(ctx, "ConfigMap", desired, current, func() string {
		return configMapHash(current.Data, current.BinaryData)
	}, func() {
		current.Data = desired.Data
		current.BinaryData = nil
	})
}

// applySecret makes the Secret match desired, as applyConfigMap does.
func (w ownedWriter) applySecret(ctx context.Context, desired *corev1.Secret) (bool, error) {
	current := &corev1.Secret{}
	setContentHash(desired, secretHash(desired.Data))
	return w.apply(ctx, "Secret", desired, current, func() string {
		return secretHash(current.Data)
	}, func() {
		current.Data = desired.Data
	})
}

// apply is the shared create-or-patch of applyConfigMap and applySecret.
// hash returns the hash of current's contents; copyData copies desired's
// contents into current.
func (w ownedWriter) apply(ctx context.Context, kind string, desired, current client.Object, hash func() string, copyData func()) (bool, error) {
	key := client.ObjectKeyFromObject(desired)
	owner := metav1.GetControllerOf(desired)
	// The watched metadata tells first whether the object is someone
	// else's: then it is refused without its content being read. Only an
	// object of the owner, or one the cache does not hold yet, is read.
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind}}
	switch err := w.metadata.Get(ctx, key, meta); {
	case err == nil && !controlledBy(meta, owner):
		return false, nameConflict(kind, key, owner)
	case err != nil && !apierrors.IsNotFound(err):
		return false, fmt.Errorf("reading the metadata of %s %s: %w", kind, key, err)
	}
	err := w.reader.Get(ctx, key, current)
	if apierrors.IsNotFound(err) {
		if err := w.client.Create(ctx, desired, fieldOwner); err != nil {
			return false, writeError("creating", kind, key, err)
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s %s: %w", kind, key, err)
	}

	if !controlledBy(current, owner) {
		return false, nameConflict(kind, key, owner)
	}
	want, have := desired.GetAnnotations()[contentHashAnnotation], hash()
	if have == want && labelsInclude(current.GetLabels(), desired.GetLabels()) {
		return false, nil
	}
	// An object written before the annotation existed, or whose annotation
	// someone removed, is adopted as it is.
	if written, marked := current.GetAnnotations()[contentHashAnnotation]; marked && written != have {
		// The data is neither what the operator wrote last nor what it
		// would write: someone else wrote it.
		return false, stall(backendsv1alpha1.ExternallyModifiedReason,
			"%s %s was changed by another writer since the operator rendered it, so the operator stopped writing it: delete it to have it rendered again, or choose another name", kind, key)
	}

	// The optimistic lock turns a write by someone else since the read into
	// a conflict: the retry reads again and sees it.
	patch := client.MergeFromWithOptions(current.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	copyData()
	current.SetLabels(mergeStrings(current.GetLabels(), desired.GetLabels()))
	current.SetAnnotations(mergeStrings(current.GetAnnotations(), desired.GetAnnotations()))
	if err := w.client.Patch(ctx, current, patch, fieldOwner); err != nil {
		return false, writeError("updating", kind, key, err)
	}
	return true, nil
}

// controlledBy reports whether owner is obj's controller.
func controlledBy(obj metav1.Object, owner *metav1.OwnerReference) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == owner.UID
}

// nameConflict is the stall of an object another owner controls.
func nameConflict(kind string, key client.ObjectKey, owner *metav1.OwnerReference) error {
	return stall(backendsv1alpha1.NameConflictReason,
		"%s %s already exists and is not controlled by %s %s: choose another name or delete it", kind, key, owner.Kind, owner.Name)
}

// writeError wraps an error writing an object. A write the API server
// refuses as invalid or too large is a stall with its reason: retrying
// the same write would only be refused again.
func writeError(verb, kind string, key client.ObjectKey, err error) error {
	if apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err) {
		return stall(backendsv1alpha1.WriteRejectedReason, "The API server refused %s %s %s: %v", verb, kind, key, apiMessage(err))
	}
	return fmt.Errorf("%s %s %s: %w", verb, kind, key, err)
}

// apiMessage is the message of an API error.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

// setContentHash records hash in obj's contentHashAnnotation.
func setContentHash(obj client.Object, hash string) {
	obj.SetAnnotations(mergeStrings(obj.GetAnnotations(), map[string]string{contentHashAnnotation: hash}))
}

// configMapHash hashes the data of a ConfigMap.
func configMapHash(data map[string]string, binary map[string][]byte) string {
	parts := make([][]byte, 0, 2*(len(data)+len(binary)))
	for _, k := range slices.Sorted(maps.Keys(data)) {
		parts = append(parts, []byte("data/"+k), []byte(data[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(binary)) {
		parts = append(parts, []byte("binaryData/"+k), binary[k])
	}
	return "sha256:" + fingerprint(parts...)
}

// secretHash hashes the data of a Secret.
func secretHash(data map[string][]byte) string {
	parts := make([][]byte, 0, 2*len(data))
	for _, k := range slices.Sorted(maps.Keys(data)) {
		parts = append(parts, []byte(k), data[k])
	}
	return "sha256:" + fingerprint(parts...)
}

// mergeStrings returns a copy of have with every entry of want set.
func mergeStrings(have, want map[string]string) map[string]string {
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, want)
	return out
}

// deletePrevious deletes the ConfigMap and the Secret the owner wrote
// under the names previous records (its status.rendered) when it now
// writes configMapName and secretName instead: objects left behind when
// the user renames them. Objects the owner does not control are left
// alone.
func (w ownedWriter) deletePrevious(ctx context.Context, owner render.Owner, previous *backendsv1alpha1.RenderedObjects, configMapName, secretName string) error {
	if previous == nil {
		return nil
	}
	for _, stale := range []struct{ kind, name, now string }{
		{"ConfigMap", previous.ConfigMapName, configMapName},
		{"Secret", previous.SecretName, secretName},
	} {
		if stale.name == "" || stale.name == stale.now {
			continue
		}
		key := types.NamespacedName{Namespace: owner.Namespace, Name: stale.name}
		if err := w.deleteIfOwned(ctx, stale.kind, key, owner.UID); err != nil {
			return fmt.Errorf("deleting the previous %s %s: %w", stale.kind, key, err)
		}
	}
	return nil
}

// deleteIfOwned deletes the ConfigMap or Secret key when owner controls
// it. It reads only the object's metadata, from the cache; the deletion is
// conditional on the UID read.
func (w ownedWriter) deleteIfOwned(ctx context.Context, kind string, key types.NamespacedName, owner types.UID) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	if err := w.metadata.Get(ctx, key, obj); err != nil {
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
