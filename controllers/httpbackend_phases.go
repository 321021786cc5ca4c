package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/render"
)

const httpBackendKind = "HttpBackend"

// Default keys of the referenced Secrets and ConfigMaps.
const (
	defaultPasswordKey = "password"
	defaultCAKey       = "ca.crt"
)

// httpSecrets is the credential material an HttpBackend references.
type httpSecrets = render.HTTPSecrets

// reconcileSpec refuses, as a stall, a spec the admission rules would
// refuse today but that was stored before they existed.
func (r *HttpBackendReconciler) reconcileSpec(_ context.Context, s *httpScope) error {
	return checkHTTPSpec(s.backend.Spec)
}

// reconcileCredentials resolves the Secrets and ConfigMaps the backend
// references and checks the PEMs: the password, the client certificate and
// key (which must match), and the CA bundle (at least one certificate). It
// fills scope.secrets. A problem is a stallError (SecretNotFound,
// SecretKeyMissing, ConfigMapNotFound, ConfigMapKeyMissing,
// InvalidCertificate) whose message names the object and key, never a value.
func (r *HttpBackendReconciler) reconcileCredentials(ctx context.Context, s *httpScope) error {
	secrets, err := resolveHTTPSecrets(ctx, r.references(s.backend.Namespace), s.backend)
	if err != nil {
		return err
	}
	s.secrets = secrets
	return nil
}

// resolveHTTPSecrets reads and checks the credential material an
// HttpBackend references. Problems are stallErrors naming the object and
// key.
func resolveHTTPSecrets(ctx context.Context, refs referenceReader, backend *backendsv1alpha1.HttpBackend) (httpSecrets, error) {
	var secrets httpSecrets
	spec := backend.Spec

	if ref := spec.PasswordSecretRef; ref != nil {
		key := ref.Key
		if key == "" {
			key = defaultPasswordKey
		}
		password, err := refs.secretKey(ctx, ref.Name, key, "spec.passwordSecretRef")
		if err != nil {
			return secrets, err
		}
		secrets.Password = password
	}

	if spec.TLS == nil {
		return secrets, nil
	}
	if ref := spec.TLS.ClientCertificateSecretRef; ref != nil {
		secret, err := refs.secret(ctx, ref.Name, "spec.tls.clientCertificateSecretRef")
		if err != nil {
			return secrets, err
		}
		cert, err := requiredKey(secret, corev1.TLSCertKey, "spec.tls.clientCertificateSecretRef")
		if err != nil {
			return secrets, err
		}
		key, err := requiredKey(secret, corev1.TLSPrivateKeyKey, "spec.tls.clientCertificateSecretRef")
		if err != nil {
			return secrets, err
		}
		if err := checkKeyPair(cert, key, fmt.Sprintf("Secret %s/%s", secret.Namespace, secret.Name)); err != nil {
			return secrets, err
		}
		secrets.ClientCertificatePEM, secrets.ClientPrivateKeyPEM = cert, key
	}
	if ca := spec.TLS.CACertificate; ca != nil {
		bundle, where, err := caBundle(ctx, refs, ca)
		if err != nil {
			return secrets, err
		}
		if err := checkCertificates(bundle, where); err != nil {
			return secrets, err
		}
		secrets.ClientCACertificatePEM = bundle
	}
	return secrets, nil
}

// caBundle reads the CA bundle from its Secret or ConfigMap and says where
// it came from, for messages.
func caBundle(ctx context.Context, refs referenceReader, ca *backendsv1alpha1.CACertificateSource) ([]byte, string, error) {
	key := ca.Key
	if key == "" {
		key = defaultCAKey
	}
	const field = "spec.tls.caCertificate"
	if ca.SecretRef != nil {
		data, err := refs.secretKey(ctx, ca.SecretRef.Name, key, field)
		return data, fmt.Sprintf("Secret %s/%s key %s", refs.namespace, ca.SecretRef.Name, key), err
	}
	if ca.ConfigMapRef != nil {
		data, err := refs.configMapKey(ctx, ca.ConfigMapRef.Name, key, field)
		return data, fmt.Sprintf("ConfigMap %s/%s key %s", refs.namespace, ca.ConfigMapRef.Name, key), err
	}
	return nil, "", stall(backendsv1alpha1.InvalidSpecReason, "%s sets neither secretRef nor configMapRef", field)
}

// reconcileRender renders backend.tf, backend.tf.json and backend.tfbackend
// into the ConfigMap and the credentials into the Secret, writing only what
// changed, and records their names in status.rendered. A render error or a
// name taken by a foreign object is a stallError; the previous render is
// left as it was.
func (r *HttpBackendReconciler) reconcileRender(ctx context.Context, s *httpScope) error {
	b := s.backend
	files, err := render.HTTPFiles(b.Spec)
	s.readyMessage, err = r.renderBackend(ctx, b, httpBackendKind, b.Spec.ConfigMapName, files, err,
		render.HTTPCredentials(s.secrets), &b.Status.Rendered)
	return err
}

// renderedObjects is the input of writeRendered.
type renderedObjects struct {
	owner         render.Owner
	configMapName string
	files         render.Files
	credentials   map[string][]byte
	previous      *backendsv1alpha1.RenderedObjects
}

// writeRendered writes a backend's ConfigMap and credentials Secret and
// deletes the ConfigMap of a previous configMapName. The Secret is written
// first: a runner that sees new files also finds the credentials they need.
func writeRendered(ctx context.Context, w ownedWriter, in renderedObjects) (*backendsv1alpha1.RenderedObjects, error) {
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

// ownerOf describes a backend as the owner of its rendered objects.
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
