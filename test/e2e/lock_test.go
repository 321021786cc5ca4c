package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

var _ = Describe("A state lock", func() {
	It("is shown with its holder, and released with forceUnlock.lockID", func(ctx SpecContext) {
		ns := newNamespace(ctx, "lock")
		mgr := startManager(ns)
		DeferCleanup(mgr.stop)
		createStateServerSecrets(ctx, ns, statePassword)
		backend := suiteBackend("locks", ns+"-locks").LockCheck().Obj()
		kc.apply(ctx, ns, manifestOf(backend))
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "httpbackend/locks", "--timeout=60s")
		kc.must(ctx, ns, "wait", "--for=condition=Locked=false", "httpbackend/locks", "--timeout=60s")

		By("writing a state with Terraform")
		tf := newRunner(ctx, GinkgoT().TempDir(), ns, "locks-backend", "locks-backend-credentials")
		tf.init(ctx)
		tf.apply(ctx)

		By("holding the lock with a LOCK request, as a Terraform run that crashed would")
		holder := lockInfo{
			ID: uuid.NewString(), Operation: "OperationTypeApply", Who: "ci-runner@build-42",
			Version: "1.5.7", Created: time.Now().UTC().Format(time.RFC3339Nano),
		}
		Expect(sendLock(ctx, backend.Spec.Address, "LOCK", holder)).To(Equal(http.StatusOK))

		By("Terraform meets the same holder")
		out, err := tf.run(ctx, "apply", "-auto-approve", "-input=false", "-lock-timeout=1s")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("Error acquiring the state lock"))
		Expect(out).To(ContainSubstring(holder.ID))

		By("kubectl shows the holder after the next probe")
		Eventually(func(g Gomega) {
			wide := kc.must(ctx, ns, "get", "httpbackend", "locks", "-o", "wide")
			g.Expect(wide).To(MatchRegexp(`locks\s+True\s+\S+\s+\d+\s+True\s+` + regexp.QuoteMeta(holder.ID)))
		}).WithTimeout(probeTimeout).Should(Succeed())
		Expect(kc.jsonpath(ctx, ns, "httpbackend/locks", "{.status.lock.who} {.status.lock.operation}")).
			To(Equal("ci-runner@build-42 OperationTypeApply"))
		status, reason, message := kc.condition(ctx, ns, "httpbackend/locks", "Locked")
		Expect(status).To(Equal("True"))
		Expect(reason).To(Equal("LockHeld"))
		Expect(message).To(ContainSubstring(holder.ID))
		// Locked is informational: a held lock never makes Ready False.
		Expect(kc.jsonpath(ctx, ns, "httpbackend/locks", `{.status.conditions[?(@.type=="Ready")].status}`)).To(Equal("True"))

		By("releasing it with kubectl patch")
		kc.must(ctx, ns, "patch", "httpbackend", "locks", "--type=merge",
			"-p", fmt.Sprintf(`{"spec":{"forceUnlock":{"lockID":%q}}}`, holder.ID))
		kc.must(ctx, ns, "wait", "--for=condition=Locked=false", "httpbackend/locks", "--timeout=60s")
		_, reason, _ = kc.condition(ctx, ns, "httpbackend/locks", "Locked")
		Expect(reason).To(Equal("ForceUnlocked"))
		Expect(kc.jsonpath(ctx, ns, "httpbackend/locks", "{.status.lastForceUnlock.lockID}")).To(Equal(holder.ID))
		Expect(kc.jsonpath(ctx, ns, "httpbackend/locks", "{.status.lock}")).To(BeEmpty())
		Expect(kc.must(ctx, ns, "get", "events", "--field-selector", "reason=ForceUnlocked")).To(ContainSubstring(holder.ID))

		By("Terraform can write again")
		tf.apply(ctx, "-var=nat_gateway_count=4")
	})
})

var _ = Describe("A lock held from a runner Pod", func() {
	It("is traced to its Pod, with the Pod read as the shipped RBAC allows, until the Pod is gone", func(ctx SpecContext) {
		ns := newNamespace(ctx, "holder")
		mgr := startManager(ns)
		DeferCleanup(mgr.stop)
		createStateServerSecrets(ctx, ns, statePassword)

		By("a runner Pod (there is no kubelet: it stays Pending), then a lock its hostname holds")
		// The API server admits a Pod only with its ServiceAccount, which
		// no controller creates here.
		kc.must(ctx, ns, "create", "serviceaccount", "default")
		kc.apply(ctx, ns, `apiVersion: v1
kind: Pod
metadata:
  name: runner-7
spec:
  containers:
    - name: terraform
      image: example.test/terraform:1.9
`)
		uid := kc.jsonpath(ctx, ns, "pod/runner-7", "{.metadata.uid}")
		podCreated, err := time.Parse(time.RFC3339, kc.jsonpath(ctx, ns, "pod/runner-7", "{.metadata.creationTimestamp}"))
		Expect(err).NotTo(HaveOccurred())
		// A Pod counts as the holder only when it was created before the
		// lock was taken, by more than the clock skew allowed (5 s), as a
		// run's Pod is: the run starts in it, then locks.
		time.Sleep(time.Until(podCreated.Add(6 * time.Second)))
		backend := suiteBackend("held", ns+"-held").LockCheck().LockPolicy(backendsv1alpha1.LockPolicy{ReleaseWhenHolderGone: true}).Obj()
		holder := lockInfo{
			ID: uuid.NewString(), Operation: "OperationTypeApply", Who: "runner@runner-7",
			Version: "1.9.8", Created: time.Now().UTC().Format(time.RFC3339Nano),
		}
		Expect(sendLock(ctx, backend.Spec.Address, "LOCK", holder)).To(Equal(http.StatusOK))
		kc.apply(ctx, ns, manifestOf(backend))

		By("the probe finds the holder's Pod by its hostname")
		Eventually(func(g Gomega) {
			g.Expect(kc.jsonpath(ctx, ns, "httpbackend/held", "{.status.holderPod.name} {.status.holderPod.uid} {.status.holderPod.phase}")).
				To(Equal("runner-7 " + uid + " Pending"))
		}).WithTimeout(probeTimeout).Should(Succeed())

		By("deleting the Pod: the next probe sees it gone and starts the grace period")
		kc.must(ctx, ns, "delete", "pod", "runner-7", "--wait")
		Eventually(func(g Gomega) {
			g.Expect(kc.jsonpath(ctx, ns, "httpbackend/held", "{.status.holderPod.phase}")).To(Equal("Gone"))
			g.Expect(kc.jsonpath(ctx, ns, "httpbackend/held", "{.status.holderPod.goneSince}")).NotTo(BeEmpty())
		}).WithTimeout(probeTimeout).Should(Succeed())
		_, _, message := kc.condition(ctx, ns, "httpbackend/held", "Locked")
		Expect(message).To(ContainSubstring("runner-7"))
	})
})

// lockInfo is Terraform's LockInfo JSON.
type lockInfo struct {
	ID        string `json:"ID"`
	Operation string `json:"Operation"`
	Info      string `json:"Info"`
	Who       string `json:"Who"`
	Version   string `json:"Version"`
	Created   string `json:"Created"`
	Path      string `json:"Path"`
}

// sendLock sends a LOCK or UNLOCK request with info to the suite's state
// server, with its credentials, and returns the status code.
func sendLock(ctx context.Context, address, method string, info lockInfo) int {
	status, _ := lockAnswer(ctx, address, method, info)
	return status
}

// lockAnswer is sendLock returning the answer's body too: the holder's
// LockInfo when the lock is held.
func lockAnswer(ctx context.Context, address, method string, info lockInfo) (int, []byte) {
	body, err := json.Marshal(info)
	Expect(err).NotTo(HaveOccurred())
	roots := x509.NewCertPool()
	Expect(roots.AppendCertsFromPEM(pki.CACert)).To(BeTrue())
	cert, err := tls.X509KeyPair(pki.ClientCert, pki.ClientKey)
	Expect(err).NotTo(HaveOccurred())
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, method, address, bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(stateUser, statePassword)
	resp, err := hc.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, answer
}
