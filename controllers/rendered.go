package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/render"
)

// The objects a backend renders for runner pods: the ConfigMap of its
// files and the Secret of its credentials, whatever its kind.

// writeRendered writes a backend's rendered files and credentials, records
// their names in status.rendered, and returns the Ready message.
// configMapName is the spec's, "" for the default.
func (r *reconciler) writeRendered(ctx context.Context, obj backendObject, kind, configMapName string,
	files render.Files, credentials map[string][]byte) (string, error) {
	status := obj.SharedStatus()
	names, err := writeRenderedObjects(ctx, r.ownedWriter(), renderedObjects{
		owner:         ownerOf(obj, kind),
		configMapName: configMapName,
		files:         files,
		credentials:   credentials,
		previous:      status.Rendered,
	})
	if err != nil {
		return "", err
	}
	status.Rendered = names
	return "Rendered ConfigMap " + names.ConfigMapName + " and Secret " + names.SecretName, nil
}

// renderedObjects is the input of writeRenderedObjects.
type renderedObjects struct {
	owner         render.Owner
	configMapName string
	files         render.Files
	credentials   map[string][]byte
	previous      *backendsv1alpha1.RenderedObjects
}

// writeRenderedObjects writes a backend's ConfigMap and credentials Secret
// and deletes those of previous names. The Secret is written first: a
// runner that sees new files also finds the credentials they need.
func writeRenderedObjects(ctx context.Context, w ownedWriter, in renderedObjects) (*backendsv1alpha1.RenderedObjects, error) {
	configMapName := in.configMapName
	if configMapName == "" {
		configMapName = render.DefaultConfigMapName(in.owner.Name)
	}
	secretName := render.CredentialsSecretName(in.owner.Name)

	if _, err := w.applySecret(ctx, render.CredentialsSecret(in.owner, secretName, in.credentials)); err != nil {
		return nil, err
	}
	if _, err := w.applyConfigMap(ctx, render.ConfigMap(in.owner, configMapName, in.files)); err != nil {
		return nil, err
	}
	if err := w.deletePrevious(ctx, in.owner, in.previous, configMapName, secretName); err != nil {
		return nil, err
	}
	return &backendsv1alpha1.RenderedObjects{ConfigMapName: configMapName, SecretName: secretName}, nil
}

// ownerOf describes an object of this API as the owner of the objects it
// renders or publishes.
func ownerOf(obj interface {
	GetName() string
	GetNamespace() string
	GetUID() types.UID
}, kind string) render.Owner {
	return render.Owner{
		APIVersion: backendsv1alpha1.GroupVersion.String(),
		Kind:       kind,
		Name:       obj.GetName(),
		Namespace:  obj.GetNamespace(),
		UID:        obj.GetUID(),
	}
}
