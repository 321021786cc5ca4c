package controllers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/testenv"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

func TestMissingKeysMessage(t *testing.T) {
	many := make([]string, 0, 30)
	for i := range 30 {
		many = append(many, fmt.Sprintf("key-%02d", i))
	}
	cases := map[string]struct {
		problem keyProblem
		want    string
	}{
		"a key another reference names": {
			problem: keyProblem{kind: "Secret", namespace: "team-a", name: "pw", field: "spec.passwordSecretRef", keyField: "spec.passwordSecretRef.key",
				missing: []string{"password"}, present: []string{"user", "pass"}},
			want: `Secret team-a/pw referenced by spec.passwordSecretRef has no key "password" (its keys: pass, user): ` +
				`add the key, or set spec.passwordSecretRef.key to the key that holds it`,
		},
		"fixed keys, one missing and one empty": {
			problem: keyProblem{kind: "Secret", namespace: "team-a", name: "cert", field: "spec.tls.clientCertificateSecretRef",
				missing: []string{"tls.key"}, empty: []string{"tls.crt"}, present: []string{"tls.crt"}},
			want: `Secret team-a/cert referenced by spec.tls.clientCertificateSecretRef has no key "tls.key" and has key "tls.crt" empty ` +
				`(its key: tls.crt): add the keys`,
		},
		"no keys at all": {
			problem: keyProblem{kind: "ConfigMap", namespace: "team-a", name: "ca", field: "spec.tls.caCertificate", keyField: "spec.tls.caCertificate.key",
				missing: []string{"ca.crt"}},
			want: `ConfigMap team-a/ca referenced by spec.tls.caCertificate has no key "ca.crt" (it has no keys): ` +
				`add the key, or set spec.tls.caCertificate.key to the key that holds it`,
		},
		"many keys: the first ten, sorted": {
			problem: keyProblem{kind: "Secret", namespace: "team-a", name: "all", field: "spec.credentialsSecretRef",
				missing: []string{"secretId", "secretKey"}, present: append(append([]string(nil), many[10:]...), many[:10]...)},
			want: `Secret team-a/all referenced by spec.credentialsSecretRef has no keys "secretId" and "secretKey" ` +
				`(its keys: key-00, key-01, key-02, key-03, key-04, key-05, key-06, key-07, key-08, key-09 and 20 more): add the keys`,
		},
		"a long key name is clipped": {
			problem: keyProblem{kind: "Secret", namespace: "team-a", name: "pw", field: "spec.passwordSecretRef",
				missing: []string{"password"}, present: []string{strings.Repeat("k", 200)}},
			want: `Secret team-a/pw referenced by spec.passwordSecretRef has no key "password" (its key: ` +
				strings.Repeat("k", 64) + `...): add the key`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, missingKeysMessage(tc.problem)); diff != "" {
				t.Errorf("missingKeysMessage() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResolveReportsEveryProblem resolves backends whose references have
// several problems: one stall names every one, with the first problem's
// reason, and never a value.
func TestResolveReportsEveryProblem(t *testing.T) {
	const ns = "team-a"
	certs := newTestCertificatesT(t)
	short := "fifteen-bytes!!"
	notFound := func(kind, name, field string) string {
		return fmt.Sprintf("%s team-a/%s referenced by %s does not exist in namespace team-a: "+
			"references name objects of the backend's own namespace, so create it there or fix the name", kind, name, field)
	}
	cases := map[string]struct {
		kind       backendKind
		backend    backendObject
		objects    []client.Object
		wantReason string
		want       []string
	}{
		"an HttpBackend missing its password Secret, its TLS Secret, its CA key and its passphrase Secret": {
			kind: httpKind{},
			backend: builders.MakeHttpBackend("web", ns, harnessAddress).BasicAuth("runner", "state-password", "").
				ClientCertificate("client-cert").CAFromConfigMap("state-ca").Encryption("tofu-passphrase").Obj(),
			objects:    []client.Object{builders.MakeConfigMap("state-ca", ns).Data(map[string]string{"ca.pem": string(certs.caPEM)}).Obj()},
			wantReason: "SecretNotFound",
			want: []string{
				notFound("Secret", "state-password", "spec.passwordSecretRef"),
				notFound("Secret", "client-cert", "spec.tls.clientCertificateSecretRef"),
				`ConfigMap team-a/state-ca referenced by spec.tls.caCertificate has no key "ca.crt" (its key: ca.pem): ` +
					`add the key, or set spec.tls.caCertificate.key to the key that holds it`,
				notFound("Secret", "tofu-passphrase", "spec.encryption.passphraseSecretRef"),
			},
		},
		"an HttpBackend whose key pair does not match and whose CA holds no certificate": {
			kind: httpKind{},
			backend: builders.MakeHttpBackend("web", ns, harnessAddress).ClientCertificate("client-cert").
				CAFromSecret("state-ca", "").Obj(),
			objects: []client.Object{
				builders.MakeSecret("client-cert", ns).TLS(certs.clientCertPEM, certs.otherKeyPEM).Obj(),
				builders.MakeSecret("state-ca", ns).Data(map[string]string{"ca.crt": "not a certificate"}).Obj(),
			},
			wantReason: "InvalidCertificate",
			want: []string{
				"Secret team-a/client-cert keys tls.crt and tls.key do not match, the private key does not belong to the certificate: " +
					"create the Secret again from a certificate and its own key (kubectl create secret tls)",
				"Secret team-a/state-ca key ca.crt holds no PEM certificate: put the PEM certificates in it",
			},
		},
		"a CosBackend without a region, with half its keys and a short passphrase": {
			kind: cosKind{},
			backend: makeCosStateBackend("cos", ns, "tfstate-1250000000").Region("").Encryption("tofu-passphrase").
				EncryptionFallback(backendsv1alpha1.EncryptionFallback{PassphraseSecretRef: &backendsv1alpha1.SecretKeyRef{Name: "old-passphrase"}}).Obj(),
			objects: []client.Object{
				builders.MakeSecret("cos-credentials", ns).Data(map[string]string{"secretId": cosSecretID, "token": "t"}).Obj(),
				builders.MakeSecret("tofu-passphrase", ns).Data(map[string]string{"passphrase": short}).Obj(),
			},
			wantReason: "RegionMissing",
			want: []string{
				"The backend sets no spec.region and the manager has no default region (--cos-default-region or TENCENTCLOUD_REGION): " +
					"set spec.region to the bucket's region",
				`Secret team-a/cos-credentials referenced by spec.credentialsSecretRef has no key "secretKey" (its keys: secretId, token): add the key`,
				"Secret team-a/tofu-passphrase key passphrase referenced by spec.encryption.passphraseSecretRef holds a passphrase shorter " +
					"than the 16 bytes OpenTofu requires: put a passphrase of at least 16 bytes of plain text in it (openssl rand -base64 32)",
				notFound("Secret", "old-passphrase", "spec.encryption.fallback.passphraseSecretRef"),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			builder := fake.NewClientBuilder().WithScheme(testenv.Scheme())
			for _, obj := range tc.objects {
				builder = builder.WithObjects(obj)
			}
			c := builder.Build()
			env := kindEnv{
				refs: referenceReader{reader: c, metadata: c, contents: related.NewContents(), namespace: ns, policy: ReferencePolicyNamespace},
			}
			_, err := tc.kind.resolve(t.Context(), env, tc.backend)
			se, ok := conditions.AsStall(err)
			if !ok {
				t.Fatalf("resolve() = %v, want a stall", err)
			}
			want := &conditions.StallError{Reason: tc.wantReason, Message: strings.Join(tc.want, ". ")}
			if diff := cmp.Diff(want, se, cmp.AllowUnexported(conditions.StallError{})); diff != "" {
				t.Errorf("resolve() stall mismatch (-want +got):\n%s", diff)
			}
			for _, secret := range []string{short, cosSecretID, string(certs.otherKeyPEM[40:80])} {
				if strings.Contains(se.Message, secret) {
					t.Errorf("the stall quotes a value: %s", se.Message)
				}
			}
		})
	}
}
