package controllers

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// stackOutputs are the outputs of the stack the RemoteState specs read.
const stackOutputs = `"vpc_id":{"value":"vpc-0a1b","type":"string"},` +
	`"azs":{"value":3,"type":"number"},` +
	`"subnets":{"value":["10.0.1.0/24","10.0.2.0/24"],"type":["list","string"]},` +
	`"tags":{"value":{"team":"platform"},"type":["map","string"]},` +
	`"db_password":{"value":"p@ss-w0rd-XYZ","type":"string","sensitive":true}`

func jsonValue(v any) apiextensionsv1.JSON {
	data, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return apiextensionsv1.JSON{Raw: data}
}

var _ = Describe("RemoteState controller", func() {
	spec := eachSpecWithManager()
	BeforeEach(func() { createPassword(spec.ctx, spec.ns) })

	createHttpBackend := func() *backendsv1alpha1.HttpBackend {
		backend := makeStateBackend("network", spec.ns).Locks().Obj()
		create(spec.ctx, backend)
		return backend
	}

	expectOutputsReady := func(remote *backendsv1alpha1.RemoteState) {
		GinkgoHelper()
		eventually(spec.ctx, remote, func(g Gomega) {
			expectKstatusInvariants(g, remote)
			expectCondition(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionTrue, "OutputsPublished")
			expectCondition(g, remote.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
		})
	}

	It("publishes plain outputs to the ConfigMap and sensitive ones only to the Secret", func() {
		ctx, ns := spec.ctx, spec.ns
		seedState(ctx, stateURL(ns), v4State(5, stackOutputs))
		createHttpBackend()
		remote := builders.MakeRemoteState("network", ns, "HttpBackend", "network").Obj()
		create(ctx, remote)
		expectOutputsReady(remote)

		cm := renderedConfigMap(ctx, Default, ns, "network-outputs")
		expectControlledBy(Default, cm, remote, "RemoteState")
		Expect(cm.Data).To(Equal(map[string]string{
			"vpc_id":  "vpc-0a1b",
			"azs":     "3",
			"subnets": `["10.0.1.0/24","10.0.2.0/24"]`,
			"tags":    `{"team":"platform"}`,
		}))
		secret := renderedSecret(ctx, Default, ns, "network-outputs")
		expectControlledBy(Default, secret, remote, "RemoteState")
		Expect(secret.Data).To(Equal(map[string][]byte{"db_password": []byte("p@ss-w0rd-XYZ")}))

		Expect(remote.Status.State).To(HaveValue(And(HaveField("Serial", int64(5)), HaveField("Lineage", "lineage-1"))))
		Expect(remote.Status.Outputs).To(ConsistOf(
			backendsv1alpha1.OutputStatus{Name: "azs", Key: "azs", Type: `"number"`},
			backendsv1alpha1.OutputStatus{Name: "db_password", Key: "db_password", Type: `"string"`, Sensitive: true},
			backendsv1alpha1.OutputStatus{Name: "subnets", Key: "subnets", Type: `["list","string"]`},
			backendsv1alpha1.OutputStatus{Name: "tags", Key: "tags", Type: `["map","string"]`},
			backendsv1alpha1.OutputStatus{Name: "vpc_id", Key: "vpc_id", Type: `"string"`},
		))
		expectNoSecretsIn(ctx, ns, []string{"p@ss-w0rd-XYZ", statePassword})
	})

	It("selects, renames and type-checks outputs, with defaults filling gaps", func() {
		ctx, ns := spec.ctx, spec.ns
		seedState(ctx, stateURL(ns), v4State(1, stackOutputs))
		createHttpBackend()
		remote := builders.MakeRemoteState("net", ns, "HttpBackend", "network").
			Defaults(map[string]apiextensionsv1.JSON{"vpc_id": jsonValue("vpc-default"), "region": jsonValue("ap-guangzhou")}).
			Outputs(
				backendsv1alpha1.OutputSelector{Name: "vpc_id", Type: "string", Key: "VPC_ID"},
				backendsv1alpha1.OutputSelector{Name: "region", Type: "string", Key: "REGION"},
				backendsv1alpha1.OutputSelector{Name: "subnets", Type: "list"},
			).
			Target("net-env", "net-secrets").Obj()
		create(ctx, remote)
		expectOutputsReady(remote)
		Expect(renderedConfigMap(ctx, Default, ns, "net-env").Data).To(Equal(map[string]string{
			"VPC_ID": "vpc-0a1b", "REGION": "ap-guangzhou", "subnets": `["10.0.1.0/24","10.0.2.0/24"]`,
		}))
		Expect(renderedSecret(ctx, Default, ns, "net-secrets").Data).To(BeEmpty())

		By("asking for a type the output does not have")
		updateSpec(ctx, remote, func() { remote.Spec.Outputs[2].Type = "map" })
		eventually(ctx, remote, func(g Gomega) {
			c := expectCondition(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionFalse, "OutputTypeMismatch")
			g.Expect(c.Message).To(Equal(`Output "subnets" is a list, not the map spec.outputs asks for: set its type in spec.outputs ` +
				`to the output's type (or to any), or change the output in the stack that writes the state`))
			expectCondition(g, remote.Status.Conditions, "Ready", metav1.ConditionFalse, "OutputTypeMismatch")
		})

		By("asking for an output the state lacks")
		updateSpec(ctx, remote, func() {
			remote.Spec.Outputs[2] = backendsv1alpha1.OutputSelector{Name: "nat_gateway_ids", Type: "list"}
		})
		eventually(ctx, remote, func(g Gomega) {
			expectConditionSaying(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionFalse, "OutputMissing", `"nat_gateway_ids"`)
		})
		Expect(renderedConfigMap(ctx, Default, ns, "net-env").Data).To(HaveKeyWithValue("VPC_ID", "vpc-0a1b"), "the last good values stay")
	})

	It("follows value changes, and keeps the last values when the state or the backend goes", func() {
		ctx, ns := spec.ctx, spec.ns
		seedState(ctx, stateURL(ns), v4State(1, stackOutputs))
		backend := createHttpBackend()
		remote := builders.MakeRemoteState("network", ns, "HttpBackend", "network").ProbeInterval(10 * time.Second).Obj()
		create(ctx, remote)
		expectOutputsReady(remote)

		By("applying a new state: the periodic read publishes it")
		seedState(ctx, stateURL(ns), v4State(2, `"vpc_id":{"value":"vpc-new","type":"string"}`))
		Eventually(func(g Gomega) {
			g.Expect(renderedConfigMap(ctx, g, ns, "network-outputs").Data).To(Equal(map[string]string{"vpc_id": "vpc-new"}))
			g.Expect(renderedSecret(ctx, g, ns, "network-outputs").Data).To(BeEmpty())
			getObject(ctx, g, remote)
			g.Expect(remote.Status.State).To(HaveValue(HaveField("Serial", int64(2))))
		}, 3*interval+20*time.Second, interval).Should(Succeed())

		By("deleting the state")
		purgeState(ctx, stateURL(ns))
		eventuallyWithin(ctx, 20*time.Second, remote, func(g Gomega) {
			expectConditionSaying(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionFalse, "StateNotFound",
				"holds no state for workspace default")
		})
		Expect(renderedConfigMap(ctx, Default, ns, "network-outputs").Data).To(Equal(map[string]string{"vpc_id": "vpc-new"}))

		By("deleting the backend")
		Expect(k8sClient.Delete(ctx, backend)).To(Succeed())
		eventually(ctx, remote, func(g Gomega) {
			expectKstatusInvariants(g, remote)
			c := expectCondition(g, remote.Status.Conditions, "Stalled", metav1.ConditionTrue, "BackendNotFound")
			g.Expect(c.Message).To(Equal("HttpBackend network does not exist in namespace " + ns +
				" (spec.backendRef names a backend of the object's own namespace). The outputs published last stay in ConfigMap network-outputs " +
				"and Secret network-outputs: create the backend again, or point spec.backendRef at one that exists"))
		})
		Expect(renderedConfigMap(ctx, Default, ns, "network-outputs").Data).To(Equal(map[string]string{"vpc_id": "vpc-new"}))
	})

	It("waits for a backend that does not exist yet", func() {
		ctx, ns := spec.ctx, spec.ns
		seedState(ctx, stateURL(ns), v4State(1, stackOutputs))
		remote := builders.MakeRemoteState("network", ns, "HttpBackend", "network").Obj()
		create(ctx, remote)
		eventuallyCondition(ctx, remote, "Stalled", metav1.ConditionTrue, "BackendNotFound")
		createHttpBackend()
		expectOutputsReady(remote)
	})

	It("reads a named workspace of a CosBackend", func() {
		ctx, ns, bucket := spec.ctx, spec.ns, cosBucket(spec.ns)
		cosServer.CreateBucket(bucket)
		cosServer.PutState(bucket, "platform/staging/terraform.tfstate", v4State(8, `"endpoint":{"value":"db.staging","type":"string"}`))
		cosServer.PutState(bucket, "platform/terraform.tfstate", v4State(3, `"endpoint":{"value":"db.default","type":"string"}`))
		staging := builders.MakeRemoteState("staging", ns, "CosBackend", "db").Workspace("staging").Obj()
		def := builders.MakeRemoteState("default", ns, "CosBackend", "db").Obj()
		create(ctx, cosCredentials(ns), makeCosStateBackend("db", ns, bucket).Obj(), staging, def)
		expectOutputsReady(staging)
		expectOutputsReady(def)
		Expect(renderedConfigMap(ctx, Default, ns, "staging-outputs").Data).To(Equal(map[string]string{"endpoint": "db.staging"}))
		Expect(renderedConfigMap(ctx, Default, ns, "default-outputs").Data).To(Equal(map[string]string{"endpoint": "db.default"}))

		missing := builders.MakeRemoteState("prod", ns, "CosBackend", "db").Workspace("prod").Obj()
		create(ctx, missing)
		eventuallyCondition(ctx, missing, "OutputsReady", metav1.ConditionFalse, "StateNotFound")
	})
})

// purgeState deletes a state through the real protocol client.
func purgeState(ctx context.Context, address string) {
	Expect(basicAuthClient(address).Purge(ctx)).To(Succeed())
}
