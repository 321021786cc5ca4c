package controllers

import (
	"context"
	"fmt"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/render"
)

// Keys of the CosBackend credentials Secret.
const (
	cosSecretIDKey      = "secretId"
	cosSecretKeyKey     = "secretKey"
	cosSecurityTokenKey = "securityToken"
)

// reconcileRegion decides the region in effect: spec.region, else the
// manager's default. Terraform requires one, so none is a stall
// (RegionMissing). It sets status.region.
func (r *CosBackendReconciler) reconcileRegion(_ context.Context, s *cosScope) error {
	s.region = s.backend.Spec.Region
	if s.region == "" {
		s.region = r.opts.cosDefaultRegion
	}
	if s.region == "" {
		return stall(backendsv1alpha1.RegionMissingReason,
			"spec.region is not set and the manager has no default region (--cos-default-region or TENCENTCLOUD_REGION)")
	}
	s.backend.Status.Region = s.region
	return nil
}

// reconcileCredentials reads secretId, secretKey and the optional
// securityToken from credentialsSecretRef. A missing Secret or key is a
// stallError naming the Secret and key.
func (r *CosBackendReconciler) reconcileCredentials(ctx context.Context, s *cosScope) error {
	ref := s.backend.Spec.CredentialsSecretRef
	if ref == nil {
		return nil
	}
	const field = "spec.credentialsSecretRef"
	refs := referenceReader{reader: r.apiReader, namespace: s.backend.Namespace}
	secret, err := refs.secret(ctx, ref.Name, field)
	if err != nil {
		return err
	}
	if s.secrets.SecretID, err = requiredKey(secret, cosSecretIDKey, field); err != nil {
		return err
	}
	if s.secrets.SecretKey, err = requiredKey(secret, cosSecretKeyKey, field); err != nil {
		return err
	}
	s.secrets.SecurityToken = secret.Data[cosSecurityTokenKey]
	return nil
}

// reconcileRender renders the backend into its ConfigMap and credentials
// Secret, writing only what changed, and records their names in
// status.rendered.
func (r *CosBackendReconciler) reconcileRender(ctx context.Context, s *cosScope) error {
	backend := s.backend
	files, err := render.CosFiles(backend.Spec, s.region)
	if err != nil {
		return stall(backendsv1alpha1.InvalidSpecReason, "Cannot render the backend configuration: %v", err)
	}
	rendered, err := writeRendered(ctx, ownedWriter{client: r.client, reader: r.apiReader}, renderedObjects{
		owner:         ownerOf(backend, cosBackendKind),
		configMapName: backend.Spec.ConfigMapName,
		files:         files,
		credentials:   render.CosCredentials(s.secrets),
		previous:      backend.Status.Rendered,
	})
	if err != nil {
		return err
	}
	backend.Status.Rendered = rendered
	s.readyMessage = fmt.Sprintf("Rendered ConfigMap %s and Secret %s", rendered.ConfigMapName, rendered.SecretName)
	return nil
}
