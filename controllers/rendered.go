package controllers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/owned"
	"github.com/infrastate/backend-operator/internal/contenthash"
	"github.com/infrastate/backend-operator/internal/render"
)

// The objects a backend renders for runner pods: the ConfigMap of its
// files and the Secret of its credentials, whatever its kind.

// writeRendered writes a backend's rendered files and credentials, records
// their names in status.rendered, and returns the Ready message.
// configMapName is the spec's, "" for the default. It remembers what it
// wrote under inputs (see owned.Memo).
func (r *reconciler) writeRendered(ctx context.Context, obj backendObject, kind, configMapName, inputs string,
	files render.Files, credentials map[string][]byte) (string, error) {
	status := obj.SharedStatus()
	written, err := writeRenderedObjects(ctx, r.rewriter(status.Rendered != nil), renderedObjects{
		owner:         ownerOf(obj, kind),
		configMapName: configMapName,
		files:         files,
		credentials:   credentials,
		previous:      status.Rendered,
	})
	if err != nil {
		return "", err
	}
	written.Inputs = inputs
	r.renders.Set(owned.WriterKey{Kind: kind, NamespacedName: client.ObjectKeyFromObject(obj)}, written)
	status.Rendered = &backendsv1alpha1.RenderedObjects{
		ConfigMapName:     written.ConfigMapName,
		SecretName:        written.SecretName,
		CompatibleRunners: render.Compatible(files.Needs),
	}
	return renderedMessage(status.Rendered), nil
}

// renderedMessage is the Ready message of a backend that rendered names,
// which says so when no runner the operator knows reads the files as the
// spec means them.
func renderedMessage(names *backendsv1alpha1.RenderedObjects) string {
	message := "Rendered ConfigMap " + names.ConfigMapName + " and Secret " + names.SecretName
	if len(names.CompatibleRunners) == 0 {
		message += "; no Terraform or OpenTofu release the operator knows reads them as the spec means"
	}
	return message
}

// unchangedRender reports whether the backend's last render, from the same
// inputs, stands as the operator wrote it: both objects under the names
// status.rendered records, controlled by the backend, at the versions the
// writer last wrote or checked, with the content hashes it wrote. Then
// there is nothing to render again, and it returns the Ready message.
// Labels are not compared: nobody changes them without changing the
// version.
func (r *reconciler) unchangedRender(ctx context.Context, obj backendObject, kind, inputs string) (string, bool) {
	writer := owned.WriterKey{Kind: kind, NamespacedName: client.ObjectKeyFromObject(obj)}
	memo, ok := r.renders.Get(writer)
	names := obj.SharedStatus().Rendered
	if !ok || memo.Inputs != inputs || names == nil ||
		names.ConfigMapName != memo.ConfigMapName || names.SecretName != memo.SecretName {
		return "", false
	}
	w := r.ownedWriter()
	for _, o := range []struct{ kind, name, hash string }{
		{"ConfigMap", memo.ConfigMapName, memo.ConfigMapHash},
		{"Secret", memo.SecretName, memo.SecretHash},
	} {
		if !w.AsWritten(ctx, writer, obj.GetUID(), o.kind, o.name, o.hash) {
			return "", false
		}
	}
	return renderedMessage(names), true
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
// runner that sees new files also finds the credentials they need. Both
// must fit the namespace's API storage share together, or neither is
// written (a BudgetExceeded stall). It returns the names and content
// hashes it wrote.
func writeRenderedObjects(ctx context.Context, w owned.Writer, in renderedObjects) (owned.Memo, error) {
	configMapName := in.configMapName
	if configMapName == "" {
		configMapName = render.DefaultConfigMapName(in.owner.Name)
	}
	secretName := render.CredentialsSecretName(in.owner.Name)

	secret := render.CredentialsSecret(in.owner, secretName, in.credentials)
	cm := render.ConfigMap(in.owner, configMapName, in.files)
	if err := w.Fit(ctx, secret, cm); err != nil {
		return owned.Memo{}, err
	}
	if _, err := w.ApplySecret(ctx, secret); err != nil {
		return owned.Memo{}, err
	}
	if _, err := w.ApplyConfigMap(ctx, cm); err != nil {
		return owned.Memo{}, err
	}
	if err := w.DeletePrevious(ctx, in.owner, in.previous, configMapName, secretName); err != nil {
		return owned.Memo{}, err
	}
	return owned.Memo{
		ConfigMapName: configMapName, SecretName: secretName,
		ConfigMapHash: cm.Annotations[contenthash.Annotation], SecretHash: secret.Annotations[contenthash.Annotation],
	}, nil
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
