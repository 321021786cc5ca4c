package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/render"
	"github.com/infrastate/backend-operator/internal/testing/builders"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// Passphrases of the encryption specs: the first holds what HCL and JSON
// escape, so that it reaches tofu literally only if the rendering is right.
const (
	firstPassphrase  = `first "pass" \phrase ${x} %{y} é`
	secondPassphrase = "second-passphrase-0123456789"
)

// storedState is the state document the suite's state server holds at
// address, as stored.
func storedState(ctx context.Context, address string) []byte {
	GinkgoHelper()
	sc := basicAuthClient(address)
	data, err := testtools.ReadStream(func(read func(io.Reader) error) (bool, int64, error) {
		return sc.StreamState(ctx, read)
	})
	Expect(err).NotTo(HaveOccurred())
	return data
}

// tofuWithRendered is a tofu workdir with stackConfig for ns and the
// environment of the backend's rendered credentials Secret, as envFrom
// gives it to a runner pod.
func tofuWithRendered(ctx context.Context, ns, backend string) testtools.Workdir {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	Expect(os.WriteFile(filepath.Join(dir, "main.tf"), []byte(fmt.Sprintf(stackConfig, stateURL(ns))), 0o600)).To(Succeed())
	secret := renderedSecret(ctx, Default, ns, render.CredentialsSecretName(backend))
	env := append(testtools.TerraformEnv(GinkgoT(), dir), "TF_HTTP_USERNAME="+stateUser)
	for k, v := range secret.Data {
		env = append(env, k+"="+string(v))
	}
	return testtools.Workdir{Bin: runnerNamed("tofu").Path, Dir: dir, Env: env}
}

// expectOutputsAsShown checks that the RemoteState's objects hold what
// `output -json` shows, sensitive outputs only in the Secret.
func expectOutputsAsShown(ctx context.Context, g Gomega, ns, name string, shown map[string]terraformOutput) {
	cm := renderedConfigMap(ctx, g, ns, name)
	secret := renderedSecret(ctx, g, ns, name)
	for key, out := range shown {
		want := published(out.Value)
		if out.Sensitive {
			g.Expect(secret.Data).To(HaveKeyWithValue(key, []byte(want)), "sensitive output %s", key)
			g.Expect(cm.Data).NotTo(HaveKey(key))
		} else {
			g.Expect(cm.Data).To(HaveKeyWithValue(key, want), "output %s", key)
			g.Expect(secret.Data).NotTo(HaveKey(key))
		}
	}
}

var _ = Describe("OpenTofu state encryption with the real tofu", func() {
	It("encrypts with the rendered TF_ENCRYPTION, decrypts for status and RemoteState, and rotates", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		startManager(ctx, ns)
		createPassword(ctx, ns)
		create(ctx,
			builders.MakeSecret("first", ns).Data(map[string]string{backendsv1alpha1.DefaultPassphraseKey: firstPassphrase}).Obj(),
			builders.MakeSecret("second", ns).Data(map[string]string{backendsv1alpha1.DefaultPassphraseKey: secondPassphrase}).Obj())

		backend := makeStateBackend("stack", ns).Locks().ProbeInterval(10*time.Second).Runner(backendsv1alpha1.RunnerOpenTofu, "").
			Encryption("first").EncryptionFallback(backendsv1alpha1.EncryptionFallback{Unencrypted: true}).Obj()
		create(ctx, backend)
		eventuallyReady(ctx, backend)

		By("tofu applying with only the rendered environment")
		w := tofuWithRendered(ctx, ns, "stack")
		w.MustRun(GinkgoT(), "init", "-input=false", "-no-color")
		w.MustRun(GinkgoT(), "apply", "-auto-approve", "-input=false", "-no-color")
		var shown map[string]terraformOutput
		Expect(json.Unmarshal([]byte(w.MustRun(GinkgoT(), "output", "-json", "-no-color")), &shown)).To(Succeed())
		Expect(shown).To(HaveLen(5))

		stored := storedState(ctx, stateURL(ns))
		Expect(stored).To(ContainSubstring(`"encrypted_data"`))
		for _, clear := range []string{"vpc-0123456789", "tf-generated-Secret-42", "10.0.1.0/24", "platform"} {
			Expect(bytes.Contains(stored, []byte(clear))).To(BeFalse(), "the stored state holds %q in clear text", clear)
		}

		By("reporting the state as encrypted, decrypted for its outputs")
		eventually(ctx, backend, func(g Gomega) {
			g.Expect(backend.Status.State).NotTo(BeNil())
			g.Expect(backend.Status.State.Encrypted).To(BeTrue())
			g.Expect(backend.Status.State.OutputCount).To(BeEquivalentTo(5))
			g.Expect(backend.Status.State.Serial).To(BeNumerically(">=", 1))
		})

		By("publishing what tofu output -json shows")
		remote := builders.MakeRemoteState("stack", ns, "HttpBackend", "stack").ProbeInterval(10 * time.Second).Obj()
		create(ctx, remote)
		eventuallyCondition(ctx, remote, "OutputsReady", metav1.ConditionTrue, "OutputsPublished")
		expectOutputsAsShown(ctx, Default, ns, "stack-outputs", shown)

		By("reporting StateEncrypted to a RemoteState whose backend sets no spec.encryption")
		plain := makeStateBackend("unkeyed", ns).Obj()
		unkeyed := builders.MakeRemoteState("unkeyed", ns, "HttpBackend", "unkeyed").Obj()
		create(ctx, plain, unkeyed)
		eventuallyCondition(ctx, unkeyed, "OutputsReady", metav1.ConditionFalse, backendsv1alpha1.StateEncryptedReason)
		eventually(ctx, plain, func(g Gomega) {
			g.Expect(plain.Status.State).NotTo(BeNil())
			g.Expect(plain.Status.State.Encrypted).To(BeTrue())
			g.Expect(plain.Status.State.Lineage).To(Equal(backend.Status.State.Lineage))
		})

		By("rotating: the second passphrase writes, the first still reads")
		updateSpec(ctx, backend, func() {
			backend.Spec.Encryption = &backendsv1alpha1.StateEncryption{
				PassphraseSecretRef: backendsv1alpha1.SecretKeyRef{Name: "second"},
				Fallback:            &backendsv1alpha1.EncryptionFallback{PassphraseSecretRef: &backendsv1alpha1.SecretKeyRef{Name: "first"}},
			}
		})
		Eventually(func(g Gomega) {
			secret := renderedSecret(ctx, g, ns, render.CredentialsSecretName("stack"))
			g.Expect(string(secret.Data[render.EnvEncryption])).To(ContainSubstring("second"))
		}, timeout, interval).Should(Succeed())
		w = tofuWithRendered(ctx, ns, "stack")
		w.MustRun(GinkgoT(), "init", "-input=false", "-no-color")
		w.MustRun(GinkgoT(), "apply", "-auto-approve", "-input=false", "-no-color")
		Expect(string(storedState(ctx, stateURL(ns)))).To(ContainSubstring("key_provider.pbkdf2.secret_second_"))
		eventually(ctx, remote, func(g Gomega) {
			expectCondition(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionTrue, "OutputsPublished")
			g.Expect(remote.Status.State.Serial).To(Equal(backendStateSerial(ctx, ns)))
		})

		By("reporting DecryptionFailed once the passphrase that wrote the state is gone")
		updateSpec(ctx, backend, func() {
			backend.Spec.Encryption = &backendsv1alpha1.StateEncryption{PassphraseSecretRef: backendsv1alpha1.SecretKeyRef{Name: "first"}}
		})
		// The messages name the passphrases tried, by Secret reference, and
		// where to put the one that wrote the state.
		tried := "The passphrases tried were Secret " + ns + "/first key passphrase (spec.encryption.passphraseSecretRef)"
		eventually(ctx, backend, func(g Gomega) {
			expectConditionSaying(g, backend.Status.Conditions, "StateReachable", metav1.ConditionFalse, backendsv1alpha1.DecryptionFailedReason,
				tried, "spec.encryption.fallback.passphraseSecretRef")
		})
		eventually(ctx, remote, func(g Gomega) {
			expectConditionSaying(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionFalse, backendsv1alpha1.DecryptionFailedReason,
				tried, "spec.encryption.fallback.passphraseSecretRef")
		})
		expectOutputsAsShown(ctx, Default, ns, "stack-outputs", shown) // the last published values stay
		Expect(backend.Status.Conditions).NotTo(ContainElement(HaveField("Message", ContainSubstring(secondPassphrase))))
	}, SpecTimeout(4*time.Minute))

	It("stalls on a passphrase OpenTofu would refuse, without quoting it, and keeps the previous render", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		startManager(ctx, ns)
		create(ctx, builders.MakeSecret("pass", ns).Data(map[string]string{backendsv1alpha1.DefaultPassphraseKey: secondPassphrase}).Obj())
		backend := builders.MakeHttpBackend("enc", ns, stateURL(ns)).ProbeInterval(0).Encryption("pass").Obj()
		create(ctx, backend)
		eventuallyReady(ctx, backend)
		before := renderedSecret(ctx, Default, ns, render.CredentialsSecretName("enc")).Data[render.EnvEncryption]
		Expect(before).NotTo(BeEmpty())

		secret := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "pass"}, secret)).To(Succeed())
		secret.Data[backendsv1alpha1.DefaultPassphraseKey] = []byte("short-secret")
		Expect(k8sClient.Update(ctx, secret)).To(Succeed())
		eventuallyCondition(ctx, backend, "Stalled", metav1.ConditionTrue, backendsv1alpha1.InvalidPassphraseReason)
		for _, c := range backend.Status.Conditions {
			Expect(c.Message).NotTo(ContainSubstring("short-secret"))
		}
		Expect(renderedSecret(ctx, Default, ns, render.CredentialsSecretName("enc")).Data[render.EnvEncryption]).To(Equal(before))
	})
})

// backendStateSerial is the serial the suite's state server holds for ns.
func backendStateSerial(ctx context.Context, ns string) int64 {
	var doc struct {
		Serial int64 `json:"serial"`
	}
	Expect(json.Unmarshal(storedState(ctx, stateURL(ns)), &doc)).To(Succeed())
	return doc.Serial
}
