package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testing/builders"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// consumerStack is team-b's stack: it takes team-a's outputs as input
// variables, which its runner sets from the RemoteState's ConfigMap and
// Secret (envFrom), and outputs what it was given.
const consumerStack = `
variable "vpc_id" {
  type = string
}

variable "subnet_ids" {
  type = list(string)
}

variable "db_password" {
  type      = string
  sensitive = true
}

output "vpc_id" {
  value = var.vpc_id
}

output "subnet_count" {
  value = length(var.subnet_ids)
}

output "db_password" {
  value     = var.db_password
  sensitive = true
}
`

// outputGrant is team-a's grant of three outputs of its backend network,
// one sensitive by name, to namespace consumer.
func outputGrant(consumer string) string {
	return `apiVersion: backends.infrastate.io/v1alpha1
kind: OutputGrant
metadata:
  name: network-to-team-b
spec:
  backends:
    - kind: HttpBackend
      name: network
  to:
    - namespace: ` + consumer + `
  outputs: [vpc_id, subnet_ids]
  sensitiveOutputs: [db_password]
`
}

var _ = Describe("Outputs shared with another namespace", func() {
	It("reach the other team's runner only through a grant, and leave it when the grant is revoked", func(ctx SpecContext) {
		producer, consumer := newNamespace(ctx, "team-a"), newNamespace(ctx, "team-b")
		mgr := startManager(producer + "," + consumer)
		DeferCleanup(mgr.stop)

		By("team-a's stack writes its outputs through its backend")
		createStateServerSecrets(ctx, producer, statePassword)
		kc.apply(ctx, producer, manifestOf(suiteBackend("network", producer+"-network").Obj()))
		kc.must(ctx, producer, "wait", "--for=condition=Ready", "httpbackend/network", "--timeout=60s")
		dir := GinkgoT().TempDir()
		tf := newRunner(ctx, dir, producer, "network-backend", "network-backend-credentials")
		tf.init(ctx)
		tf.apply(ctx)
		serial := tf.serial(ctx)

		By("team-b's RemoteState reads nothing of team-a without a grant")
		kc.apply(ctx, consumer, manifestOf(builders.MakeRemoteState("network", "", backendsv1alpha1.HttpBackendKind, "network").
			FromNamespace(producer).ProbeInterval(10*time.Second).
			Outputs(backendsv1alpha1.OutputSelector{Name: "vpc_id", Key: "TF_VAR_vpc_id"},
				backendsv1alpha1.OutputSelector{Name: "subnet_ids", Key: "TF_VAR_subnet_ids"},
				backendsv1alpha1.OutputSelector{Name: "db_password", Key: "TF_VAR_db_password"}).Obj()))
		Eventually(func(g Gomega) {
			status, reason, message := kc.condition(ctx, consumer, "remotestate/network", "Stalled")
			g.Expect(status).To(Equal("True"))
			g.Expect(reason).To(Equal(backendsv1alpha1.ReferenceNotGrantedReason))
			g.Expect(message).To(ContainSubstring(producer))
		}).WithTimeout(probeTimeout).Should(Succeed())

		By("team-a grants three outputs to team-b, the sensitive one by name")
		kc.apply(ctx, producer, outputGrant(consumer))
		Eventually(func(g Gomega) {
			g.Expect(kc.jsonpath(ctx, consumer, "remotestate/network", "{.status.state.serial}")).To(Equal(strconv.FormatInt(serial, 10)))
		}).WithTimeout(probeTimeout).Should(Succeed())
		kc.must(ctx, consumer, "wait", "--for=condition=Ready", "remotestate/network", "--timeout=60s")
		plain, sensitive := kc.configMapData(ctx, consumer, "network-outputs"), kc.secretData(ctx, consumer, "network-outputs")
		Expect(plain).To(Equal(map[string]string{"TF_VAR_vpc_id": "vpc-0a1b2c3d4e5f", "TF_VAR_subnet_ids": `["subnet-0aa11","subnet-0bb22","subnet-0cc33"]`}))
		Expect(sensitive).To(Equal(map[string]string{"TF_VAR_db_password": "demo-db-password"}))
		Eventually(func(g Gomega) {
			g.Expect(kc.jsonpath(ctx, producer, "outputgrant/network-to-team-b", "{.status.consumers[0].namespace}")).To(Equal(consumer))
		}).WithTimeout(probeTimeout).Should(Succeed(), "the grant lists who consumes what")

		By("team-b's runner reads them from its own namespace, as envFrom sets them")
		root := filepath.Join(dir, "team-b")
		Expect(os.MkdirAll(root, 0o700)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(root, "main.tf"), []byte(consumerStack), 0o600)).To(Succeed())
		consumerRunner := &runner{cli: terraformCLI, dir: root, env: append(testtools.TerraformEnv(GinkgoT(), root), egress.env()...)}
		for k, v := range plain {
			consumerRunner.env = append(consumerRunner.env, k+"="+v)
		}
		for k, v := range sensitive {
			consumerRunner.env = append(consumerRunner.env, k+"="+v)
		}
		consumerRunner.must(ctx, "init", "-input=false")
		consumerRunner.apply(ctx)
		got := consumerRunner.outputs(ctx)
		Expect(got).To(HaveKey("vpc_id"))
		Expect(got["vpc_id"].Value).To(MatchJSON(`"vpc-0a1b2c3d4e5f"`))
		Expect(got["subnet_count"].Value).To(MatchJSON(`3`))
		Expect(got["db_password"].Sensitive).To(BeTrue())
		var password string
		Expect(json.Unmarshal(got["db_password"].Value, &password)).To(Succeed())
		Expect(password).To(Equal("demo-db-password"))

		By("revoking the grant removes the outputs from team-b within seconds")
		kc.must(ctx, producer, "delete", "outputgrant", "network-to-team-b")
		Eventually(func(g Gomega) {
			g.Expect(kc.configMapData(ctx, consumer, "network-outputs")).To(BeEmpty())
			g.Expect(kc.secretData(ctx, consumer, "network-outputs")).To(BeEmpty())
			_, reason, _ := kc.condition(ctx, consumer, "remotestate/network", "Stalled")
			g.Expect(reason).To(Equal(backendsv1alpha1.ReferenceNotGrantedReason))
		}).WithTimeout(15 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	})
})
