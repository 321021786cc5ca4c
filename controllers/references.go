package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// referenceReader reads the Secrets and ConfigMaps a backend references,
// straight from the API server: the manager never caches their contents.
type referenceReader struct {
	reader    client.Reader
	namespace string
}

// secret fetches a Secret of the object's namespace; a missing Secret is a
// stallError with reason SecretNotFound.
func (r referenceReader) secret(ctx context.Context, name, field string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	err := r.reader.Get(ctx, types.NamespacedName{Namespace: r.namespace, Name: name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return nil, stall(backendsv1alpha1.SecretNotFoundReason,
			"Secret %s/%s referenced by %s does not exist", r.namespace, name, field)
	case err != nil:
		return nil, fmt.Errorf("reading Secret %s/%s: %w", r.namespace, name, err)
	}
	return secret, nil
}

// secretKey returns one key of a Secret; a missing or empty key is a
// stallError with reason SecretKeyMissing.
func (r referenceReader) secretKey(ctx context.Context, name, key, field string) ([]byte, error) {
	secret, err := r.secret(ctx, name, field)
	if err != nil {
		return nil, err
	}
	return requiredKey(secret, key, field)
}

// requiredKey returns a non-empty key of a Secret already read.
func requiredKey(secret *corev1.Secret, key, field string) ([]byte, error) {
	value, ok := secret.Data[key]
	if !ok || len(value) == 0 {
		return nil, stall(backendsv1alpha1.SecretKeyMissingReason,
			"Secret %s/%s referenced by %s has no key %q", secret.Namespace, secret.Name, field, key)
	}
	return value, nil
}

// configMapKey returns one key of a ConfigMap (data or binaryData).
func (r referenceReader) configMapKey(ctx context.Context, name, key, field string) ([]byte, error) {
	cm := &corev1.ConfigMap{}
	err := r.reader.Get(ctx, types.NamespacedName{Namespace: r.namespace, Name: name}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, stall(backendsv1alpha1.ConfigMapNotFoundReason,
			"ConfigMap %s/%s referenced by %s does not exist", r.namespace, name, field)
	case err != nil:
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", r.namespace, name, err)
	}
	if value, ok := cm.Data[key]; ok && value != "" {
		return []byte(value), nil
	}
	if value, ok := cm.BinaryData[key]; ok && len(value) > 0 {
		return value, nil
	}
	return nil, stall(backendsv1alpha1.ConfigMapKeyMissingReason,
		"ConfigMap %s/%s referenced by %s has no key %q", r.namespace, name, field, key)
}
