package controllers

import (
	"crypto/md5"
	"encoding/hex"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// makeCosStateBackend starts a CosBackend of bucket on the suite's COS
// server, in region ap-guangzhou under the prefix platform, with the
// credentials of cosCredentials.
func makeCosStateBackend(name, namespace, bucket string) *builders.CosBackendWrapper {
	return builders.MakeCosBackend(name, namespace, bucket).Region("ap-guangzhou").Prefix("platform").Credentials("cos-credentials")
}

// cosBucket is the bucket of a spec: bucket names are <name>-<appid>, and
// the namespace keeps them apart.
func cosBucket(namespace string) string { return namespace + "-1250000000" }

// cosCredentials is the Secret "cos-credentials" makeCosStateBackend refers to,
// with the keys the suite's COS server accepts.
func cosCredentials(namespace string) *corev1.Secret {
	return builders.MakeSecret("cos-credentials", namespace).Data(map[string]string{"secretId": cosSecretID, "secretKey": cosSecretKey}).Obj()
}

// lockJSON is a .tflock object as Terraform's cos backend writes it.
const lockJSON = `{"ID":"0f6b6d2c-4a8e-4a51-9d1e-7c2b1f0e9a11","Operation":"OperationTypeApply","Info":"","Who":"bob@ci","Version":"1.5.7","Created":"2026-01-02T03:04:05.123456789Z","Path":"platform/terraform.tfstate.tflock"}`

var _ = Describe("CosBackend controller", func() {
	spec := eachSpec()
	BeforeEach(func() {
		credentials := cosCredentials(spec.ns)
		credentials.Data["securityToken"] = []byte("temporary-token")
		create(spec.ctx, credentials)
	})

	It("renders the backend and reports the bucket, the state and the lock", func() {
		ctx, ns, bucket := spec.ctx, spec.ns, cosBucket(spec.ns)
		startManager(ctx, ns)
		cosServer.CreateBucket(bucket)
		cosServer.PutState(bucket, "platform/terraform.tfstate", v4State(3, `"vpc_id":{"value":"vpc-1","type":"string"}`))
		cosServer.PutState(bucket, "platform/terraform.tfstate.tflock", []byte(lockJSON))
		backend := makeCosStateBackend("network", ns, bucket).Encrypt(true).Obj()
		create(ctx, backend)

		eventually(ctx, backend, func(g Gomega) {
			expectKstatusInvariants(g, backend)
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			expectCondition(g, backend.Status.Conditions, "BucketReady", metav1.ConditionTrue, "Reachable")
			expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, "LockHeld")
		})

		Expect(backend.Status.Region).To(Equal("ap-guangzhou"))
		Expect(backend.Status.State).To(HaveValue(And(
			HaveField("Present", true), HaveField("Serial", int64(3)), HaveField("Lineage", "lineage-1"), HaveField("OutputCount", int32(1)),
		)))
		sum := md5.Sum([]byte(lockJSON))
		Expect(backend.Status.Lock).To(HaveValue(And(
			HaveField("ID", hex.EncodeToString(sum[:])), HaveField("Who", "bob@ci"), HaveField("Operation", "OperationTypeApply"),
		)), "the lock ID is the one terraform force-unlock takes for COS")

		cm := renderedConfigMap(ctx, Default, ns, "network-backend")
		expectControlledBy(Default, cm, backend, "CosBackend")
		Expect(cm.Data["backend.tf"]).To(ContainSubstring(`backend "cos"`))
		Expect(cm.Data["backend.tf"]).To(ContainSubstring(bucket))
		Expect(cm.Data["backend.tf"]).To(ContainSubstring(`"ap-guangzhou"`))
		secret := renderedSecret(ctx, Default, ns, "network-backend-credentials")
		expectControlledBy(Default, secret, backend, "CosBackend")
		Expect(secret.Data).To(Equal(map[string][]byte{
			"TENCENTCLOUD_SECRET_ID":      []byte(cosSecretID),
			"TENCENTCLOUD_SECRET_KEY":     []byte(cosSecretKey),
			"TENCENTCLOUD_SECURITY_TOKEN": []byte("temporary-token"),
		}))
		expectNoSecretsIn(ctx, ns, []string{cosSecretKey, "temporary-token"})
	})

	It("uses the manager's default region when the spec sets none", func() {
		ctx, ns, bucket := spec.ctx, spec.ns, cosBucket(spec.ns)
		startManager(ctx, ns, WithCosDefaultRegion("ap-shanghai"))
		cosServer.CreateBucket(bucket)
		backend := makeCosStateBackend("network", ns, bucket).Region("").Obj()
		create(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			g.Expect(backend.Status.Region).To(Equal("ap-shanghai"))
			g.Expect(backend.Status.State).To(HaveValue(HaveField("Present", false)))
			expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionFalse, "NotLocked")
		})
		Expect(renderedConfigMap(ctx, Default, ns, "network-backend").Data["backend.tf"]).To(ContainSubstring(`"ap-shanghai"`))
	})

	DescribeTable("reports why the backend cannot be used",
		func(setup func(ns, bucket string) *backendsv1alpha1.CosBackend, condType string, status metav1.ConditionStatus, reason string, message ...string) {
			startManager(spec.ctx, spec.ns)
			expectExplained(spec.ctx, setup(spec.ns, cosBucket(spec.ns)), condType, status, reason, message...)
		},
		Entry("a bucket that does not exist", func(ns, bucket string) *backendsv1alpha1.CosBackend {
			return makeCosStateBackend("b", ns, bucket).Obj()
		}, "BucketReady", metav1.ConditionFalse, "BucketNotFound", "does not exist", "Create it (its name is <name>-<appid>), or check spec.bucket and spec.region"),
		Entry("credentials COS refuses", func(ns, bucket string) *backendsv1alpha1.CosBackend {
			cosServer.CreateBucket(bucket)
			create(spec.ctx, builders.MakeSecret("wrong", ns).Data(map[string]string{"secretId": cosSecretID, "secretKey": "not-the-key"}).Obj())
			return makeCosStateBackend("b", ns, bucket).Credentials("wrong").Obj()
		}, "BucketReady", metav1.ConditionFalse, "AccessDenied", "COS refused access to bucket", "Check secretId and secretKey"),
		Entry("a state object without its checksum", func(ns, bucket string) *backendsv1alpha1.CosBackend {
			cosServer.CreateBucket(bucket)
			cosServer.PutObject(bucket, "platform/terraform.tfstate", v4State(1, ""), nil)
			return makeCosStateBackend("b", ns, bucket).Obj()
		}, "BucketReady", metav1.ConditionFalse, "StateUnreadable", "x-cos-meta-md5", "Push the state again with terraform state push"),
		Entry("no region anywhere", func(ns, bucket string) *backendsv1alpha1.CosBackend {
			return makeCosStateBackend("b", ns, bucket).Region("").Obj()
		}, "Stalled", metav1.ConditionTrue, "RegionMissing", "--cos-default-region", "set spec.region"),
		Entry("a credentials Secret without secretKey", func(ns, bucket string) *backendsv1alpha1.CosBackend {
			create(spec.ctx, builders.MakeSecret("partial", ns).Data(map[string]string{"secretId": cosSecretID}).Obj())
			return makeCosStateBackend("b", ns, bucket).Credentials("partial").Obj()
		}, "Stalled", metav1.ConditionTrue, "SecretKeyMissing", `has no key "secretKey" (its key: secretId): add the key`),
	)
})
