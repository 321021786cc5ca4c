package controllers

// The suite's own objects: thin wrappers over the shared builders
// (internal/testing/builders) for what only this suite knows, the
// addresses of its state servers and the Secrets and ConfigMaps that hold
// their credentials.

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// makeStateBackend starts an HttpBackend of the namespace's state on the
// suite's plain state server, with the basic auth of the Secret
// createPassword creates.
func makeStateBackend(name, namespace string) *builders.HttpBackendWrapper {
	return builders.MakeHttpBackend(name, namespace, stateURL(namespace)).BasicAuth(stateUser, "state-password", "")
}

// makeTLSStateBackend starts an HttpBackend of the namespace's state on
// the suite's mutual TLS state server, with the client certificate of
// suiteClientCert and the CA of suiteCAConfigMap.
func makeTLSStateBackend(name, namespace string) *builders.HttpBackendWrapper {
	return builders.MakeHttpBackend(name, namespace, tlsStateURL(namespace)).ClientCertificate("client-cert").CAFromConfigMap("state-ca")
}

// suiteCAConfigMap is the ConfigMap "state-ca" holding the suite's CA
// under ca.crt.
func suiteCAConfigMap(namespace string) *corev1.ConfigMap {
	return builders.MakeConfigMap("state-ca", namespace).Data(map[string]string{"ca.crt": string(suiteCerts.caPEM)}).Obj()
}

// suitePassword is the Secret "state-password" holding the suite state
// server's password under "password".
func suitePassword(namespace string) *corev1.Secret {
	return builders.MakeSecret("state-password", namespace).Data(map[string]string{"password": statePassword}).Obj()
}

// suiteClientCert is the kubernetes.io/tls Secret "client-cert" holding the
// suite's client certificate.
func suiteClientCert(namespace string) *corev1.Secret {
	return builders.MakeSecret("client-cert", namespace).TLS(suiteCerts.clientCertPEM, suiteCerts.clientKeyPEM).Obj()
}
