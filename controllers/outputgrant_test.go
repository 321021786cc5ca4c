package controllers

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// The OutputGrant specs rely on the RemoteStates that read through a
// grant existing, and on the outputs their status says they published:
// the specs write those outputs themselves, as the RemoteState controller
// would publish them from the producer's state they also seed.

// sharedOutputs are the outputs of the producer's stack, as a RemoteState
// that publishes them all lists them.
var sharedOutputs = []backendsv1alpha1.OutputStatus{
	{Name: "vpc_id", Key: "vpc_id", Type: `"string"`},
	{Name: "subnets", Key: "subnets", Type: `["list","string"]`},
	{Name: "db_password", Key: "db_password", Type: `"string"`, Sensitive: true},
}

// producerStack gives namespace the HttpBackend "network", whose state
// holds the outputs of sharedOutputs.
func producerStack(ctx context.Context, namespace string) {
	GinkgoHelper()
	seedState(ctx, stateURL(namespace), v4State(3, `"vpc_id":{"value":"vpc-0a1b","type":"string"},`+
		`"subnets":{"value":["10.0.1.0/24"],"type":["list","string"]},`+
		`"db_password":{"value":"p@ss-w0rd-XYZ","type":"string","sensitive":true}`))
	createPassword(ctx, namespace)
	create(ctx, makeStateBackend("network", namespace).Obj())
}

// readingNetwork creates the RemoteState name of namespace that reads the
// HttpBackend "network" of producer, and gives its status the outputs it
// would publish, unless it already lists some.
func readingNetwork(ctx context.Context, name, namespace, producer string) *backendsv1alpha1.RemoteState {
	GinkgoHelper()
	rs := builders.MakeRemoteState(name, namespace, backendsv1alpha1.HttpBackendKind, "network").FromNamespace(producer).Obj()
	create(ctx, rs)
	Eventually(func(g Gomega) {
		getObject(ctx, g, rs)
		if len(rs.Status.Outputs) > 0 {
			return
		}
		before := rs.DeepCopy()
		rs.Status.Outputs = sharedOutputs
		g.Expect(k8sClient.Status().Patch(ctx, rs, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))).To(Succeed())
	}, timeout, interval).Should(Succeed())
	return rs
}

// labelNamespace sets the labels of namespace.
func labelNamespace(ctx context.Context, namespace string, labels map[string]string) {
	GinkgoHelper()
	ns := &corev1.Namespace{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Name: namespace}, ns)).To(Succeed())
	before := ns.DeepCopy()
	ns.Labels = labels
	Expect(k8sClient.Patch(ctx, ns, client.MergeFrom(before))).To(Succeed())
}

// consumer is an entry of a grant's status.consumers reading "network".
func consumer(namespace, name string, outputs ...string) backendsv1alpha1.GrantConsumerStatus {
	return backendsv1alpha1.GrantConsumerStatus{Namespace: namespace, Name: name,
		Backend: backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.HttpBackendKind, Name: "network"}, Outputs: outputs}
}

// expectConsumers waits until grant lists exactly want, counts as many,
// and is Ready.
func expectConsumers(ctx context.Context, grant *backendsv1alpha1.OutputGrant, want ...backendsv1alpha1.GrantConsumerStatus) {
	GinkgoHelper()
	eventually(ctx, grant, func(g Gomega) {
		expectKstatusInvariants(g, grant)
		g.Expect(grant.Status.Consumers).To(Equal(want))
		g.Expect(grant.Status.ConsumerCount).To(BeNumerically("==", len(want)))
		expectCondition(g, grant.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
	})
}

// makeGrant is the OutputGrant "network" of namespace, granting to the
// consumers to.
func makeGrant(namespace string, to ...backendsv1alpha1.GrantConsumer) *backendsv1alpha1.OutputGrant {
	return &backendsv1alpha1.OutputGrant{ObjectMeta: metav1.ObjectMeta{Name: "network", Namespace: namespace},
		Spec: backendsv1alpha1.OutputGrantSpec{To: to}}
}

var _ = Describe("OutputGrant controller", func() {
	It("lists the RemoteStates of other namespaces that read through it, with the outputs it grants them", func() {
		ctx, producer := newSpec()
		consumerNS, otherNS := newNamespace(ctx), newNamespace(ctx)
		startManagerFor(ctx, []string{producer, consumerNS, otherNS})
		producerStack(ctx, producer)

		grant := makeGrant(producer, backendsv1alpha1.GrantConsumer{Namespace: consumerNS})
		grant.Spec.Outputs, grant.Spec.SensitiveOutputs = []string{"vpc_id"}, []string{"db_password"}
		grant.Spec.Backends = []backendsv1alpha1.BackendReference{{Kind: backendsv1alpha1.HttpBackendKind, Name: "network"}}
		create(ctx, grant)
		expectConsumers(ctx, grant)
		Expect(findCondition(grant.Status.Conditions, "Ready").Message).To(Equal(
			"Grants outputs vpc_id and sensitive outputs db_password of HttpBackend network to 0 RemoteStates"))

		By("a RemoteState of the granted namespace is listed, with the granted outputs it published")
		readingNetwork(ctx, "web", consumerNS, producer)
		expectConsumers(ctx, grant, consumer(consumerNS, "web", "db_password", "vpc_id"))

		By("neither a RemoteState of another namespace, nor one reading a backend it does not name, nor one of the grant's own namespace")
		readingNetwork(ctx, "app", otherNS, producer)
		create(ctx, builders.MakeRemoteState("dns", consumerNS, backendsv1alpha1.HttpBackendKind, "dns").FromNamespace(producer).Obj(),
			builders.MakeRemoteState("local", producer, backendsv1alpha1.HttpBackendKind, "network").Obj())
		api := readingNetwork(ctx, "api", consumerNS, producer)
		expectConsumers(ctx, grant, consumer(consumerNS, "api", "db_password", "vpc_id"), consumer(consumerNS, "web", "db_password", "vpc_id"))
		Expect(findCondition(grant.Status.Conditions, "Ready").Message).To(HaveSuffix("to 2 RemoteStates"))

		By("a narrowed grant lists the outputs it still grants")
		updateSpec(ctx, grant, func() { grant.Spec.SensitiveOutputs = nil })
		expectConsumers(ctx, grant, consumer(consumerNS, "api", "vpc_id"), consumer(consumerNS, "web", "vpc_id"))

		By("a RemoteState deleted is no longer listed")
		Expect(k8sClient.Delete(ctx, api)).To(Succeed())
		expectConsumers(ctx, grant, consumer(consumerNS, "web", "vpc_id"))

		By("a reconciliation that learns nothing new writes nothing")
		before := grant.ResourceVersion
		Consistently(func(g Gomega) {
			getObject(ctx, g, grant)
			g.Expect(grant.ResourceVersion).To(Equal(before))
		}, 2*time.Second, interval).Should(Succeed())
	})

	It("lists a RemoteState once its namespace is labelled as its selector says, and drops it when relabelled", func() {
		ctx, producer := newSpec()
		consumerNS := newNamespace(ctx)
		startManagerFor(ctx, []string{producer, consumerNS})
		producerStack(ctx, producer)

		grant := makeGrant(producer, backendsv1alpha1.GrantConsumer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"infrastate.io/network-outputs": "granted"}}})
		create(ctx, grant)
		readingNetwork(ctx, "web", consumerNS, producer)
		expectConsumers(ctx, grant)
		Expect(findCondition(grant.Status.Conditions, "Ready").Message).To(ContainSubstring(
			"its namespace selectors can match only the namespaces the manager watches: "))

		By("labelling the namespace")
		labelNamespace(ctx, consumerNS, map[string]string{"infrastate.io/network-outputs": "granted"})
		expectConsumers(ctx, grant, consumer(consumerNS, "web", "subnets", "vpc_id"))

		By("relabelling it")
		labelNamespace(ctx, consumerNS, map[string]string{"infrastate.io/network-outputs": "revoked"})
		expectConsumers(ctx, grant)
	})

	It("says it cannot serve a namespace it names that the manager does not watch", func() {
		ctx, producer := newSpec()
		consumerNS, unwatched := newNamespace(ctx), newNamespace(ctx)
		startManagerFor(ctx, []string{producer, consumerNS})

		grant := makeGrant(producer, backendsv1alpha1.GrantConsumer{Namespace: consumerNS}, backendsv1alpha1.GrantConsumer{Namespace: unwatched})
		expectExplained(ctx, grant, "Ready", metav1.ConditionFalse, backendsv1alpha1.NamespaceNotWatchedReason,
			"this grant cannot serve the RemoteStates of namespace "+unwatched+", which spec.to names")
		Expect(findCondition(grant.Status.Conditions, "Stalled")).To(BeNil())

		By("it serves the namespaces it can all the same")
		readingNetwork(ctx, "web", consumerNS, producer)
		eventually(ctx, grant, func(g Gomega) {
			g.Expect(grant.Status.Consumers).To(Equal([]backendsv1alpha1.GrantConsumerStatus{consumer(consumerNS, "web", "subnets", "vpc_id")}))
			expectCondition(g, grant.Status.Conditions, "Ready", metav1.ConditionFalse, backendsv1alpha1.NamespaceNotWatchedReason)
		})

		By("it is Ready once it names only namespaces the manager watches")
		updateSpec(ctx, grant, func() { grant.Spec.To = grant.Spec.To[:1] })
		eventuallyReady(ctx, grant)
	})

	It("stalls on a selector that does not parse, until the spec is fixed", func() {
		ctx, producer := newSpec()
		startManager(ctx, producer)

		grant := makeGrant(producer, backendsv1alpha1.GrantConsumer{NamespaceSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn}}}})
		expectExplained(ctx, grant, "Stalled", metav1.ConditionTrue, backendsv1alpha1.InvalidSpecReason, "spec.to[0].namespaceSelector")

		updateSpec(ctx, grant, func() { grant.Spec.To[0].NamespaceSelector.MatchExpressions[0].Values = []string{"network"} })
		eventuallyReady(ctx, grant)
	})
})
