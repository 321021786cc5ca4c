package controllers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// TestReconcileReportsEveryBrokenReference checks that a backend whose
// references have several problems stalls once, with one Stalled
// condition and one event naming every problem, renders nothing, and
// recovers once they are all fixed.
func TestReconcileReportsEveryBrokenReference(t *testing.T) {
	certs := newTestCertificatesT(t)
	const passphrase = "harness-passphrase-0123456789"
	backend := newWebBackend(func(b *builders.HttpBackendWrapper) {
		b.ClientCertificate("client-cert").CAFromConfigMap("state-ca").Encryption("tofu-passphrase")
	})
	// The CA is there, under another key than the spec names.
	misnamedCA := builders.MakeConfigMap("state-ca", harnessNamespace).Data(map[string]string{"ca.pem": string(certs.caPEM)}).Obj()
	stalled := []metav1.Condition{
		wantCond("Ready", metav1.ConditionFalse, "SecretNotFound"),
		wantCond("Stalled", metav1.ConditionTrue, "SecretNotFound"),
	}
	want := strings.Join([]string{
		"Secret team-a/state-password referenced by spec.passwordSecretRef does not exist in namespace team-a: " +
			"references name objects of the backend's own namespace, so create it there or fix the name",
		"Secret team-a/client-cert referenced by spec.tls.clientCertificateSecretRef does not exist in namespace team-a: " +
			"references name objects of the backend's own namespace, so create it there or fix the name",
		`ConfigMap team-a/state-ca referenced by spec.tls.caCertificate has no key "ca.crt" (its key: ca.pem): ` +
			"add the key, or set spec.tls.caCertificate.key to the key that holds it",
		"Secret team-a/tofu-passphrase referenced by spec.encryption.passphraseSecretRef does not exist in namespace team-a: " +
			"references name objects of the backend's own namespace, so create it there or fix the name",
	}, ". ")

	cases := map[string]reconcileCase{
		"four broken references, one status": {
			objects: []client.Object{backend, misnamedCA},
			target:  webBackend,
			steps: []reconcileStep{{
				name:           "every problem at once",
				wantRequeue:    noRequeue,
				wantConditions: stalled,
				wantEvents:     []recordedEvent{{Object: "web", Type: corev1.EventTypeWarning, Reason: "SecretNotFound", Action: "Reconcile"}},
				check: func(t *testing.T, e *reconcileEnv) {
					conds := e.httpBackend(webBackend.name).Status.Conditions
					for _, c := range []string{"Stalled", "Ready"} {
						if diff := cmp.Diff(want, meta.FindStatusCondition(conds, c).Message); diff != "" {
							t.Errorf("%s message (-want +got):\n%s", c, diff)
						}
					}
					if note := e.events.recorded()[0].Note; note != want {
						t.Errorf("event note = %q, want the four problems", note)
					}
					if cm, secret := e.configMap(webConfigMap), e.secret(webSecret); cm != nil || secret != nil {
						t.Errorf("rendered ConfigMap %v and Secret %v, want nothing rendered", cm != nil, secret != nil)
					}
				},
			}, {
				name: "all four fixed in one go",
				before: func(e *reconcileEnv) {
					e.create(passwordSecret())
					e.create(builders.MakeSecret("client-cert", harnessNamespace).TLS(certs.clientCertPEM, certs.clientKeyPEM).Obj())
					e.create(builders.MakeSecret("tofu-passphrase", harnessNamespace).Data(map[string]string{"passphrase": passphrase}).Obj())
					cm := misnamedCA.DeepCopy()
					e.update(cm, func() { cm.Data = map[string]string{"ca.crt": string(certs.caPEM)} })
				},
				do:             reconcileUntilProbed,
				wantConditions: reachable,
				wantCalls:      []string{"FetchSummary"},
				check: func(t *testing.T, e *reconcileEnv) {
					if secret := e.secret(webSecret); secret == nil || len(secret.Data) != 5 {
						t.Errorf("credentials Secret = %v, want the password, the key pair, the CA and TF_ENCRYPTION", secret)
					}
				},
			}},
		},
	}
	runReconcileCases(t, cases)
}
