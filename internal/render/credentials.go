package render

import "bytes"

// Environment variables Terraform reads the backends' credentials from: the
// keys of the credentials Secret.
const (
	// EnvHTTPPassword is the http backend's basic auth password.
	EnvHTTPPassword = "TF_HTTP_PASSWORD"
	// EnvHTTPClientCertificatePEM is the http backend's client certificate.
	EnvHTTPClientCertificatePEM = "TF_HTTP_CLIENT_CERTIFICATE_PEM"
	// EnvHTTPClientPrivateKeyPEM is the private key of the client
	// certificate.
	EnvHTTPClientPrivateKeyPEM = "TF_HTTP_CLIENT_PRIVATE_KEY_PEM"
	// EnvHTTPClientCACertificatePEM is the CA bundle that replaces the
	// system roots.
	EnvHTTPClientCACertificatePEM = "TF_HTTP_CLIENT_CA_CERTIFICATE_PEM"

	// EnvCosSecretID is the Tencent Cloud secret id.
	EnvCosSecretID = "TENCENTCLOUD_SECRET_ID" //nolint:gosec // the variable's name, not a credential
	// EnvCosSecretKey is the Tencent Cloud secret key.
	EnvCosSecretKey = "TENCENTCLOUD_SECRET_KEY" //nolint:gosec // the variable's name, not a credential
	// EnvCosSecurityToken is the token of temporary Tencent Cloud
	// credentials.
	EnvCosSecurityToken = "TENCENTCLOUD_SECURITY_TOKEN" //nolint:gosec // the variable's name, not a credential
)

// HTTPSecrets is the secret material of an http backend, resolved from its
// Secret (and ConfigMap) references. Empty fields are not set.
type HTTPSecrets struct {
	// Password is the basic auth password.
	Password []byte
	// ClientCertificatePEM is the PEM client certificate for mutual TLS.
	ClientCertificatePEM []byte
	// ClientPrivateKeyPEM is the PEM private key of the client certificate.
	ClientPrivateKeyPEM []byte
	// ClientCACertificatePEM is the PEM CA bundle trusted for the server.
	ClientCACertificatePEM []byte
}

// HTTPCredentials returns the environment of an http backend's credentials
// Secret: TF_HTTP_PASSWORD, TF_HTTP_CLIENT_CERTIFICATE_PEM,
// TF_HTTP_CLIENT_PRIVATE_KEY_PEM and TF_HTTP_CLIENT_CA_CERTIFICATE_PEM, each
// only when non-empty. The values are copies; the result is never nil.
func HTTPCredentials(s HTTPSecrets) map[string][]byte {
	return credentials(
		envVar{EnvHTTPPassword, s.Password},
		envVar{EnvHTTPClientCertificatePEM, s.ClientCertificatePEM},
		envVar{EnvHTTPClientPrivateKeyPEM, s.ClientPrivateKeyPEM},
		envVar{EnvHTTPClientCACertificatePEM, s.ClientCACertificatePEM},
	)
}

// CosSecrets is the secret material of a cos backend, resolved from its
// credentials Secret. Empty fields are not set.
type CosSecrets struct {
	// SecretID is the Tencent Cloud secret id.
	SecretID []byte
	// SecretKey is the Tencent Cloud secret key.
	SecretKey []byte
	// SecurityToken is the token of temporary credentials.
	SecurityToken []byte
}

// CosCredentials returns the environment of a cos backend's credentials
// Secret: TENCENTCLOUD_SECRET_ID, TENCENTCLOUD_SECRET_KEY and
// TENCENTCLOUD_SECURITY_TOKEN, each only when non-empty. The values are
// copies; the result is never nil.
func CosCredentials(s CosSecrets) map[string][]byte {
	return credentials(
		envVar{EnvCosSecretID, s.SecretID},
		envVar{EnvCosSecretKey, s.SecretKey},
		envVar{EnvCosSecurityToken, s.SecurityToken},
	)
}

// envVar is one environment variable of a credentials Secret.
type envVar struct {
	name  string
	value []byte
}

// credentials returns the non-empty variables of vars as Secret data, with
// copies of their values.
func credentials(vars ...envVar) map[string][]byte {
	out := make(map[string][]byte, len(vars))
	for _, v := range vars {
		if len(v.value) > 0 {
			out[v.name] = bytes.Clone(v.value)
		}
	}
	return out
}
