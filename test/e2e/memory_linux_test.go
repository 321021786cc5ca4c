package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/testing/builders"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// manyOutputsState is a 64 MB state of n empty outputs.
func manyOutputsState(n int) []byte {
	var b strings.Builder
	b.Grow(n * 40)
	b.WriteString(`{"version":4,"terraform_version":"1.5.7","serial":1,"lineage":"huge","outputs":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"o%d":{"value":"","type":"string"}`, i)
	}
	b.WriteString(`},"resources":[],"check_results":null}`)
	return []byte(b.String())
}

var _ = Describe("A state of 1.7 million outputs", func() {
	It("is probed and refused by a RemoteState with the manager's memory bounded, under the shipped GOMEMLIMIT", func(ctx SpecContext) {
		ns := newNamespace(ctx, "memory")
		server := startStateServer(stateServerOptions{dataDir: filepath.Join(GinkgoT().TempDir(), "states")})
		DeferCleanup(server.stop)

		By("uploading the state")
		state := manyOutputsState(1_700_000)
		GinkgoWriter.Printf("state of %d bytes\n", len(state))
		Expect(len(state)).To(BeNumerically("<", stateclient.DefaultMaxStateBytes), "the state must be within the client's limit to be read at all")
		sc, err := stateclient.New(stateclient.DefaultConfig(server.stateURL("huge")))
		Expect(err).NotTo(HaveOccurred())
		Expect(sc.Update(ctx, state)).To(Succeed())

		By("running the manager as shipped: GOMEMLIMIT=256MiB")
		mgr := startManagerWithEnv(ns, []string{"GOMEMLIMIT=256MiB"})
		DeferCleanup(mgr.stop)
		kc.apply(ctx, ns, manifestOf(makeBackend("huge", server.stateURL("huge")).Obj(),
			builders.MakeRemoteState("huge", "", backendsv1alpha1.HttpBackendKind, "huge").Obj()))
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "httpbackend/huge", "--timeout=120s")
		Expect(kc.jsonpath(ctx, ns, "httpbackend/huge", "{.status.state.outputCount}")).To(Equal("1700000"))
		Eventually(func(g Gomega) {
			status, reason, message := kc.condition(ctx, ns, "remotestate/huge", "OutputsReady")
			g.Expect(status).To(Equal("False"))
			g.Expect(reason).To(Equal("OutputsTooLarge"))
			g.Expect(message).To(ContainSubstring("spec.outputs"))
		}).WithTimeout(2 * time.Minute).Should(Succeed())

		peak := testtools.PeakResidentBytes(GinkgoT(), mgr.cmd.Process.Pid) >> 20
		GinkgoWriter.Printf("manager peak resident memory: %d MiB\n", peak)
		Expect(peak).To(BeNumerically("<", 192), "the manager's memory must not grow with the state")
		select {
		case <-mgr.exited:
			Fail("the manager exited:\n" + mgr.logs())
		default:
		}
	})
})
