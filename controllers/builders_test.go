package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// httpBackendBuilder builds HttpBackends for the tests.
type httpBackendBuilder struct{ obj *backendsv1alpha1.HttpBackend }

// makeHttpBackend starts an HttpBackend at address with the given name.
func makeHttpBackend(name, namespace, address string) *httpBackendBuilder {
	return &httpBackendBuilder{obj: &backendsv1alpha1.HttpBackend{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       backendsv1alpha1.HttpBackendSpec{Address: address},
	}}
}

// makeStateBackend starts an HttpBackend of the namespace's state on the
// suite's plain state server, with the basic auth of the Secret
// createPassword creates.
func makeStateBackend(name, namespace string) *httpBackendBuilder {
	return makeHttpBackend(name, namespace, stateURL(namespace)).basicAuth(stateUser, "state-password", "")
}

// makeTLSStateBackend starts an HttpBackend of the namespace's state on
// the suite's mutual TLS state server, with the client certificate of
// suiteClientCert and the CA of suiteCAConfigMap.
func makeTLSStateBackend(name, namespace string) *httpBackendBuilder {
	return makeHttpBackend(name, namespace, tlsStateURL(namespace)).clientCertificate("client-cert").caFromConfigMap("state-ca")
}

func (b *httpBackendBuilder) locks() *httpBackendBuilder {
	b.obj.Spec.LockAddress, b.obj.Spec.UnlockAddress = b.obj.Spec.Address, b.obj.Spec.Address
	return b
}

func (b *httpBackendBuilder) basicAuth(user, secret, key string) *httpBackendBuilder {
	b.obj.Spec.Username = user
	b.obj.Spec.PasswordSecretRef = &backendsv1alpha1.SecretKeyRef{Name: secret, Key: key}
	return b
}

func (b *httpBackendBuilder) clientCertificate(secret string) *httpBackendBuilder {
	b.tls().ClientCertificateSecretRef = &backendsv1alpha1.LocalSecretRef{Name: secret}
	return b
}

func (b *httpBackendBuilder) caFromConfigMap(name string) *httpBackendBuilder {
	b.tls().CACertificate = &backendsv1alpha1.CACertificateSource{ConfigMapRef: &backendsv1alpha1.LocalConfigMapRef{Name: name}}
	return b
}

func (b *httpBackendBuilder) caFromSecret(name, key string) *httpBackendBuilder {
	b.tls().CACertificate = &backendsv1alpha1.CACertificateSource{SecretRef: &backendsv1alpha1.LocalSecretRef{Name: name}, Key: key}
	return b
}

func (b *httpBackendBuilder) tls() *backendsv1alpha1.HttpBackendTLS {
	if b.obj.Spec.TLS == nil {
		b.obj.Spec.TLS = &backendsv1alpha1.HttpBackendTLS{}
	}
	return b.obj.Spec.TLS
}

func (b *httpBackendBuilder) retries(retryMax, waitMin, waitMax int32) *httpBackendBuilder {
	b.obj.Spec.RetryMax, b.obj.Spec.RetryWaitMin, b.obj.Spec.RetryWaitMax = &retryMax, &waitMin, &waitMax
	return b
}

func (b *httpBackendBuilder) lockCheck() *httpBackendBuilder {
	b.probe().LockCheck = true
	return b
}

func (b *httpBackendBuilder) probeInterval(d time.Duration) *httpBackendBuilder {
	b.probe().Interval = &metav1.Duration{Duration: d}
	return b
}

func (b *httpBackendBuilder) probe() *backendsv1alpha1.HttpProbeSpec {
	if b.obj.Spec.Probe == nil {
		b.obj.Spec.Probe = &backendsv1alpha1.HttpProbeSpec{}
	}
	return b.obj.Spec.Probe
}

func (b *httpBackendBuilder) forceUnlock(id string) *httpBackendBuilder {
	b.obj.Spec.ForceUnlock = &backendsv1alpha1.ForceUnlockSpec{LockID: id}
	return b
}

func (b *httpBackendBuilder) configMapName(name string) *httpBackendBuilder {
	b.obj.Spec.ConfigMapName = name
	return b
}

func (b *httpBackendBuilder) build() *backendsv1alpha1.HttpBackend { return b.obj }

// makeSecret returns an Opaque Secret with string data.
func makeSecret(name, namespace string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// makeConfigMap returns a ConfigMap with data.
func makeConfigMap(name, namespace string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Data: data}
}

// suiteCAConfigMap is the ConfigMap "state-ca" holding the suite's CA
// under ca.crt.
func suiteCAConfigMap(namespace string) *corev1.ConfigMap {
	return makeConfigMap("state-ca", namespace, map[string]string{"ca.crt": string(suiteCerts.caPEM)})
}

// suitePassword is the Secret "state-password" holding the suite state
// server's password under "password".
func suitePassword(namespace string) *corev1.Secret {
	return makeSecret("state-password", namespace, map[string]string{"password": statePassword})
}

// suiteClientCert is the kubernetes.io/tls Secret "client-cert" holding the
// suite's client certificate.
func suiteClientCert(namespace string) *corev1.Secret {
	return makeTLSSecret("client-cert", namespace, suiteCerts.clientCertPEM, suiteCerts.clientKeyPEM)
}

// makeTLSSecret returns a kubernetes.io/tls Secret.
func makeTLSSecret(name, namespace string, cert, key []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key},
	}
}

// metaTime returns a pointer to t as a metav1.Time.
func metaTime(t time.Time) *metav1.Time {
	m := metav1.NewTime(t)
	return &m
}
