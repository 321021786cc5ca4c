package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// freezeReason is the reason of the StateLock of these specs.
const freezeReason = "Release freeze: no applies until 2.4 ships (ask #platform)"

// freezeOf is the StateLock "release-freeze" of the HttpBackend backend.
func freezeOf(backend string) *backendsv1alpha1.StateLock {
	return builders.MakeStateLock("release-freeze", "", backendsv1alpha1.HttpBackendKind, backend).Reason(freezeReason).Obj()
}

var _ = Describe("A StateLock", func() {
	It("fails terraform apply naming its lock, and -lock-timeout waits until it is deleted", func(ctx SpecContext) {
		ns := newNamespace(ctx, "slock")
		mgr := startManager(ns)
		DeferCleanup(mgr.stop)
		createStateServerSecrets(ctx, ns, statePassword)
		backend := suiteBackend("frozen", ns+"-frozen").Obj()
		kc.apply(ctx, ns, manifestOf(backend))
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "httpbackend/frozen", "--timeout=60s")

		By("writing a state with Terraform")
		tf := newRunner(ctx, GinkgoT().TempDir(), ns, "frozen-backend", "frozen-backend-credentials")
		tf.init(ctx)
		tf.apply(ctx)

		By("opening a change freeze with kubectl apply")
		kc.apply(ctx, ns, manifestOf(freezeOf("frozen")))
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "statelock/release-freeze", "--timeout=60s")
		id := kc.jsonpath(ctx, ns, "statelock/release-freeze", "{.status.lockID}")
		Expect(id).NotTo(BeEmpty())
		Expect(kc.must(ctx, ns, "get", "slock")).To(MatchRegexp(`release-freeze\s+True\s+frozen\s+\S+\s+LockAcquired\s+`))
		Expect(kc.must(ctx, ns, "get", "infrastate")).To(ContainSubstring("statelock.backends.infrastate.io/release-freeze"))

		By("terraform apply meeting the StateLock's lock")
		out, err := tf.run(ctx, "apply", "-auto-approve", "-input=false", "-lock-timeout=2s", "-var=nat_gateway_count=5")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("Error acquiring the state lock"))
		Expect(out).To(ContainSubstring(id))

		By("the holder's LockInfo the server returns naming the StateLock and its reason")
		status, body := lockAnswer(ctx, backend.Spec.Address, "LOCK", lockInfo{
			ID: uuid.NewString(), Operation: "OperationTypeApply", Who: "e2e@test", Created: time.Now().UTC().Format(time.RFC3339Nano),
		})
		Expect(status).To(Equal(http.StatusLocked))
		var holder lockInfo
		Expect(json.Unmarshal(body, &holder)).To(Succeed())
		Expect(holder.ID).To(Equal(id))
		Expect(holder.Who).To(Equal("backend-operator/" + ns + "/release-freeze"))
		Expect(holder.Info).To(Equal(freezeReason))

		By("terraform apply -lock-timeout=60s waiting while the StateLock is deleted")
		expectApplyWaitsUntilDeleted(ctx, tf, ns, "release-freeze", id)
	})
})

// expectApplyWaitsUntilDeleted runs terraform apply -lock-timeout=60s with
// tf while the StateLock statelock of namespace holds lock id: the apply
// waits for the lock, the StateLock is deleted, and the apply completes
// once the deletion released the lock (event LockReleased naming id).
func expectApplyWaitsUntilDeleted(ctx context.Context, tf *runner, namespace, statelock, id string) {
	GinkgoHelper()
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer GinkgoRecover()
		out, err := tf.run(ctx, "apply", "-auto-approve", "-input=false", "-lock-timeout=60s", "-var=nat_gateway_count=5")
		done <- result{out, err}
	}()
	Consistently(done, 3*time.Second).ShouldNot(Receive(), "terraform waits for the lock")
	kc.must(ctx, namespace, "delete", "statelock", statelock, "--timeout=60s")
	var res result
	Eventually(done, 90*time.Second).Should(Receive(&res))
	Expect(res.err).NotTo(HaveOccurred(), res.out)
	Expect(res.out).To(ContainSubstring("Apply complete!"))
	Expect(kc.must(ctx, namespace, "get", "events", "--field-selector", "reason=LockReleased")).To(ContainSubstring(id))
}
