package controllers

import (
	"context"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/render"
)

// Keys of the CosBackend credentials Secret.
const (
	cosSecretIDKey      = "secretId"
	cosSecretKeyKey     = "secretKey"
	cosSecurityTokenKey = "securityToken"
)

// reconcileSpec refuses, as a stall, a spec the admission rules would
// refuse today but that was stored before they existed.
func (r *CosBackendReconciler) reconcileSpec(_ context.Context, s *cosScope) error {
	return checkCosSpec(s.backend.Spec)
}

// reconcileRegion decides the region in effect and sets status.region.
func (r *CosBackendReconciler) reconcileRegion(_ context.Context, s *cosScope) error {
	region, err := effectiveRegion(s.backend.Spec, r.opts.cosDefaultRegion)
	if err != nil {
		return err
	}
	s.region = region
	s.backend.Status.Region = region
	return nil
}

// effectiveRegion is spec.region, else the manager's default. Terraform
// requires a region, so none is a stall (RegionMissing).
func effectiveRegion(spec backendsv1alpha1.CosBackendSpec, managerDefault string) (string, error) {
	if spec.Region != "" {
		return spec.Region, nil
	}
	if managerDefault != "" {
		return managerDefault, nil
	}
	return "", stall(backendsv1alpha1.RegionMissingReason,
		"spec.region is not set and the manager has no default region (--cos-default-region or TENCENTCLOUD_REGION)")
}

// reconcileCredentials reads the credentials the backend references.
func (r *CosBackendReconciler) reconcileCredentials(ctx context.Context, s *cosScope) error {
	secrets, err := resolveCosSecrets(ctx, r.references(s.backend.Namespace), s.backend)
	if err != nil {
		return err
	}
	s.secrets = secrets
	return nil
}

// resolveCosSecrets reads secretId, secretKey and the optional
// securityToken from credentialsSecretRef. A missing Secret or key is a
// stallError naming the Secret and key.
func resolveCosSecrets(ctx context.Context, refs referenceReader, backend *backendsv1alpha1.CosBackend) (render.CosSecrets, error) {
	var secrets render.CosSecrets
	ref := backend.Spec.CredentialsSecretRef
	if ref == nil {
		return secrets, nil
	}
	const field = "spec.credentialsSecretRef"
	secret, err := refs.secret(ctx, ref.Name, field)
	if err != nil {
		return secrets, err
	}
	if secrets.SecretID, err = requiredKey(secret, cosSecretIDKey, field); err != nil {
		return secrets, err
	}
	if secrets.SecretKey, err = requiredKey(secret, cosSecretKeyKey, field); err != nil {
		return secrets, err
	}
	secrets.SecurityToken = secret.Data[cosSecurityTokenKey]
	return secrets, nil
}

// reconcileRender renders the backend into its ConfigMap and credentials
// Secret, writing only what changed, and records their names in
// status.rendered.
func (r *CosBackendReconciler) reconcileRender(ctx context.Context, s *cosScope) error {
	b := s.backend
	files, err := render.CosFiles(b.Spec, s.region)
	s.readyMessage, err = r.renderBackend(ctx, b, cosBackendKind, b.Spec.ConfigMapName, files, err,
		render.CosCredentials(s.secrets), &b.Status.Rendered)
	return err
}
