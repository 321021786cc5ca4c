package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers"
	"github.com/infrastate/backend-operator/internal/outputs"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/testing/builders"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// twoLargeOutputsState is a state of two outputs of size bytes each, one
// sensitive: 1.8 MB of outputs for size 900,000.
func twoLargeOutputsState(size int) []byte {
	value := strings.Repeat("x", size)
	return fmt.Appendf(nil, `{"version":4,"terraform_version":"1.5.7","serial":1,"lineage":"large","outputs":{`+
		`"plain":{"value":%q,"type":"string"},"secret":{"value":%q,"type":"string","sensitive":true}},"resources":[],"check_results":null}`,
		value, value)
}

// etcdBytesInUse is the size of the suite's etcd database in use, from its
// metrics: what the API server's storage holds.
func etcdBytesInUse(ctx context.Context) int64 {
	GinkgoHelper()
	u := *testEnv.ControlPlane.Etcd.URL
	u.Path = "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), http.NoBody)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	for line := range strings.Lines(string(body)) {
		if rest, ok := strings.CutPrefix(line, "etcd_mvcc_db_total_size_in_use_in_bytes "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			Expect(err).NotTo(HaveOccurred())
			return int64(v)
		}
	}
	Fail("etcd serves no etcd_mvcc_db_total_size_in_use_in_bytes")
	return 0
}

// publishedBytes is what the RemoteStates of namespace published, counted
// as the API server counts data.
func publishedBytes(ctx context.Context, namespace string) int64 {
	GinkgoHelper()
	var n int64
	var cms corev1.ConfigMapList
	Expect(k8sClient.List(ctx, &cms, client.InNamespace(namespace), client.HasLabels{outputs.RemoteStateLabel})).To(Succeed())
	for _, cm := range cms.Items {
		for k, v := range cm.Data {
			n += int64(len(k) + len(v))
		}
	}
	var secrets corev1.SecretList
	Expect(k8sClient.List(ctx, &secrets, client.InNamespace(namespace), client.HasLabels{outputs.RemoteStateLabel})).To(Succeed())
	for _, s := range secrets.Items {
		for k, v := range s.Data {
			n += int64(len(k) + len(v))
		}
	}
	return n
}

var _ = Describe("A thousand RemoteStates reading 1.8 MB of outputs each", Label("budgets"), func() {
	It("keep the manager within its memory limit, and each namespace within its API storage share", func(ctx SpecContext) {
		const tenants, perTenant = 5, 200
		server := startStateServer(stateServerOptions{dataDir: filepath.Join(GinkgoT().TempDir(), "states")})
		DeferCleanup(server.stop)
		sc, err := stateclient.New(stateclient.DefaultConfig(server.stateURL("large")))
		Expect(err).NotTo(HaveOccurred())
		Expect(sc.Update(ctx, twoLargeOutputsState(900_000))).To(Succeed())

		var namespaces []string
		for range tenants {
			namespaces = append(namespaces, newNamespace(ctx, "budgets"))
		}
		storageBefore := etcdBytesInUse(ctx)

		By("running the manager as shipped: GOMEMLIMIT=256MiB, the default budgets")
		mgr := startManagerWithEnv(strings.Join(namespaces, ","), []string{"GOMEMLIMIT=256MiB"})
		DeferCleanup(mgr.stop)
		for _, ns := range namespaces {
			objs := []client.Object{makeBackend("large", server.stateURL("large")).ProbeInterval(10 * time.Minute).Obj()}
			for i := range perTenant {
				objs = append(objs, builders.MakeRemoteState(fmt.Sprintf("reader-%d", i), "", backendsv1alpha1.HttpBackendKind, "large").
					ProbeInterval(10*time.Minute).
					Outputs(backendsv1alpha1.OutputSelector{Name: "plain"}, backendsv1alpha1.OutputSelector{Name: "secret"}).Obj())
			}
			kc.apply(ctx, ns, manifestOf(objs...))
		}

		By("waiting for every RemoteState to publish, or to be refused by its namespace's share")
		refusals := map[string]int{}
		Eventually(func(g Gomega) {
			for _, ns := range namespaces {
				var list backendsv1alpha1.RemoteStateList
				g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
				g.Expect(list.Items).To(HaveLen(perTenant))
				refused := 0
				for _, rs := range list.Items {
					c := meta.FindStatusCondition(rs.Status.Conditions, backendsv1alpha1.OutputsReadyCondition)
					g.Expect(c).NotTo(BeNil(), "RemoteState %s/%s has no OutputsReady yet", ns, rs.Name)
					g.Expect(c.Reason).To(BeElementOf(backendsv1alpha1.OutputsPublishedReason, backendsv1alpha1.BudgetExceededReason),
						"RemoteState %s/%s: %s", ns, rs.Name, c.Message)
					if c.Reason == backendsv1alpha1.BudgetExceededReason {
						g.Expect(c.Message).To(ContainSubstring("--" + controllers.APIStoragePerNamespaceFlag))
						refused++
					}
				}
				refusals[ns] = refused
			}
		}).WithTimeout(15 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())

		peak := testtools.PeakResidentBytes(GinkgoT(), mgr.cmd.Process.Pid) >> 20
		storageGrowth := (etcdBytesInUse(ctx) - storageBefore) >> 20
		share := controllers.DefaultBudgets().APIStoragePerNamespace
		for _, ns := range namespaces {
			published := publishedBytes(ctx, ns)
			GinkgoWriter.Printf("namespace %s: %d MiB published, %d RemoteStates refused\n", ns, published>>20, refusals[ns])
			Expect(published).To(BeNumerically("<=", share), "namespace %s published beyond its API storage share", ns)
			Expect(refusals[ns]).To(BeNumerically(">", 0), "namespace %s asked for more than its share: some must be refused", ns)
		}
		GinkgoWriter.Printf("manager peak resident memory: %d MiB; API server storage grew by %d MiB\n", peak, storageGrowth)
		Expect(peak).To(BeNumerically("<", 256), "the manager must stay within the memory limit its GOMEMLIMIT is set from")
		Expect(storageGrowth).To(BeNumerically("<", int64(tenants)*(share>>20)+128),
			"the API server's storage must grow by the tenants' shares and the objects' own size, not by what they ask for")
		select {
		case <-mgr.exited:
			Fail("the manager exited:\n" + mgr.logs())
		default:
		}
	})
})
