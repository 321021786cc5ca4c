package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/related"
)

// ReferencePolicy says which Secrets and ConfigMaps of its namespace a
// backend may reference.
type ReferencePolicy string

const (
	// ReferencePolicyNamespace lets a backend reference any Secret or
	// ConfigMap of its namespace, as a Pod can: whoever may create a
	// backend in a namespace may read its Secrets through it.
	ReferencePolicyNamespace ReferencePolicy = "namespace"
	// ReferencePolicyLabeled lets a backend reference only the Secrets and
	// ConfigMaps labelled backends.infrastate.io/allow-reference: "true";
	// the operator never reads the content of any other.
	ReferencePolicyLabeled ReferencePolicy = "labeled"
)

// referenceReader reads the Secrets and ConfigMaps a backend references
// under the manager's reference policy: from the API server once per
// version, then from the contents kept in memory (see related.Contents;
// the manager caches no other Secret's content).
type referenceReader struct {
	reader client.Reader
	// metadata reads metadata without annotations (see reconciler).
	metadata client.Reader
	// contents are the contents already read, by version.
	contents  *related.Contents
	namespace string
	policy    ReferencePolicy
}

// secret fetches a Secret of the object's namespace; a missing Secret is a
// stall with reason SecretNotFound, one the policy does not allow a
// stall with reason ReferenceNotAllowed.
func (r referenceReader) secret(ctx context.Context, name, field string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	if err := r.get(ctx, secret, &corev1.SecretList{}, "Secret", name, field); err != nil {
		return nil, err
	}
	return secret, nil
}

// secretKey returns one key of a Secret; a missing or empty key is a
// stall with reason SecretKeyMissing (see requiredKeys). keyField is
// the spec field that names the key.
func (r referenceReader) secretKey(ctx context.Context, name, key, field, keyField string) ([]byte, error) {
	secret, err := r.secret(ctx, name, field)
	if err != nil {
		return nil, err
	}
	values, err := requiredKeys(secret, field, keyField, key)
	if err != nil {
		return nil, err
	}
	return values[0], nil
}

// requiredKeys returns non-empty keys of a Secret already read, in the
// order asked. Keys that are missing or empty are one stall with
// reason SecretKeyMissing, naming them all and listing the keys the
// Secret has. keyField is the spec field that names the key ("" when the
// keys are fixed, as tls.crt and tls.key are).
func requiredKeys(secret *corev1.Secret, field, keyField string, keys ...string) ([][]byte, error) {
	values := make([][]byte, len(keys))
	var missing, empty []string
	for i, key := range keys {
		value, ok := secret.Data[key]
		switch {
		case !ok:
			missing = append(missing, key)
		case len(value) == 0:
			empty = append(empty, key)
		}
		values[i] = value
	}
	if len(missing) == 0 && len(empty) == 0 {
		return values, nil
	}
	return nil, conditions.Stall(backendsv1alpha1.SecretKeyMissingReason, "%s", missingKeysMessage(keyProblem{
		kind: "Secret", namespace: secret.Namespace, name: secret.Name, field: field, keyField: keyField,
		missing: missing, empty: empty, present: slices.Collect(maps.Keys(secret.Data)),
	}))
}

// configMapKey returns one key of a ConfigMap (data or binaryData); a
// missing or empty key is a stall with reason ConfigMapKeyMissing
// that lists the keys the ConfigMap has.
func (r referenceReader) configMapKey(ctx context.Context, name, key, field, keyField string) ([]byte, error) {
	cm := &corev1.ConfigMap{}
	if err := r.get(ctx, cm, &corev1.ConfigMapList{}, "ConfigMap", name, field); err != nil {
		return nil, err
	}
	if value, ok := cm.Data[key]; ok && value != "" {
		return []byte(value), nil
	}
	if value, ok := cm.BinaryData[key]; ok && len(value) > 0 {
		return value, nil
	}
	problem := keyProblem{kind: "ConfigMap", namespace: r.namespace, name: name, field: field, keyField: keyField,
		present: append(slices.Collect(maps.Keys(cm.Data)), slices.Collect(maps.Keys(cm.BinaryData))...)}
	if _, ok := cm.Data[key]; ok || cm.BinaryData[key] != nil {
		problem.empty = []string{key}
	} else {
		problem.missing = []string{key}
	}
	return nil, conditions.Stall(backendsv1alpha1.ConfigMapKeyMissingReason, "%s", missingKeysMessage(problem))
}

// get reads the Secret or ConfigMap name into obj. The content is read
// from the API server once per version: while the metadata the manager
// watches shows the version read last (and, under the labeled policy,
// the label), the content kept in memory is used (see
// related.Contents).
func (r referenceReader) get(ctx context.Context, obj client.Object, list client.ObjectList, kind, name, field string) error {
	key := related.ContentKey{Kind: kind, NamespacedName: types.NamespacedName{Namespace: r.namespace, Name: name}}
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind}}
	if err := r.metadata.Get(ctx, key.NamespacedName, meta); err == nil && r.allowed(meta) &&
		r.contents.Get(key, meta.GetResourceVersion(), obj) {
		return nil
	}
	err := r.read(ctx, obj, list, kind, name, field)
	if err != nil {
		r.contents.Forget(key)
		return err
	}
	r.contents.Put(key, obj)
	if watched, ok := r.metadata.(related.Reader); ok {
		// Named by an object now: the watch holds it from here on.
		watched.Remember(kind, obj)
	}
	return nil
}

// allowed reports whether the policy lets a backend read the object whose
// metadata is meta.
func (r referenceReader) allowed(meta metav1.Object) bool {
	return r.policy != ReferencePolicyLabeled || meta.GetLabels()[backendsv1alpha1.AllowReferenceLabel] == "true"
}

// read reads the Secret or ConfigMap name into obj from the API server.
// Under the labeled policy it lists by name and by the allow-reference
// label, so that the API server itself filters: an unlabelled object's
// content never reaches the operator. When nothing matches, metadata
// tells a missing object from one without the label (see exists), never
// a read of the object itself.
func (r referenceReader) read(ctx context.Context, obj client.Object, list client.ObjectList, kind, name, field string) error {
	key := types.NamespacedName{Namespace: r.namespace, Name: name}
	if r.policy != ReferencePolicyLabeled {
		err := r.reader.Get(ctx, key, obj)
		switch {
		case apierrors.IsNotFound(err):
			return r.notFound(kind, name, field)
		case err != nil:
			return fmt.Errorf("reading %s %s: %w", kind, key, err)
		}
		return nil
	}

	err := r.reader.List(ctx, list, client.InNamespace(r.namespace),
		client.MatchingFields{"metadata.name": name},
		client.MatchingLabels{backendsv1alpha1.AllowReferenceLabel: "true"})
	if err != nil {
		return fmt.Errorf("reading %s %s: %w", kind, key, err)
	}
	found := false
	if err := related.ForEachObject(list, func(o client.Object) {
		if o.GetName() == name && !found {
			found = true
			copyInto(obj, o)
		}
	}); err != nil {
		return fmt.Errorf("reading %s %s: %w", kind, key, err)
	}
	if found {
		return nil
	}
	switch exists, err := r.exists(ctx, kind, key); {
	case err != nil:
		return fmt.Errorf("reading the metadata of %s %s: %w", kind, key, err)
	case !exists:
		return r.notFound(kind, name, field)
	}
	return conditions.Stall(backendsv1alpha1.ReferenceNotAllowedReason,
		"%s %s/%s referenced by %s is not labelled %s=true, which the manager's --secret-reference-policy=labeled requires: add the label to allow this reference",
		kind, r.namespace, name, field, backendsv1alpha1.AllowReferenceLabel)
}

// exists reports whether the Secret or ConfigMap key exists, from the
// metadata the watch holds, or, when it does not hold it (an object that
// no object of this API named when it last changed), from a list of
// metadata by name: the API server then sends its annotations, which are
// dropped at once.
func (r referenceReader) exists(ctx context.Context, kind string, key types.NamespacedName) (bool, error) {
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind}}
	err := r.metadata.Get(ctx, key, meta)
	switch {
	case err == nil:
		return true, nil
	case !apierrors.IsNotFound(err):
		return false, err
	}
	if _, ok := r.metadata.(related.Reader); !ok {
		return false, nil // the metadata reader holds every object
	}
	_, found, err := related.MetadataFromAPI(ctx, r.reader, r.metadata, kind, key)
	return found, err
}

// notFound is the stall of a missing reference. References name objects
// of the backend's own namespace: the message says so, for the user who
// created the object in another one.
func (r referenceReader) notFound(kind, name, field string) error {
	reason := backendsv1alpha1.SecretNotFoundReason
	if kind == "ConfigMap" {
		reason = backendsv1alpha1.ConfigMapNotFoundReason
	}
	return conditions.Stall(reason, "%s", notFoundMessage(kind, r.namespace, name, field))
}

// copyInto copies a listed Secret or ConfigMap into obj of the same type.
func copyInto(obj, from client.Object) {
	switch dst := obj.(type) {
	case *corev1.Secret:
		*dst = *from.(*corev1.Secret)
	case *corev1.ConfigMap:
		*dst = *from.(*corev1.ConfigMap)
	}
}
