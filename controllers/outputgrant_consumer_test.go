package controllers

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/grants"
	"github.com/infrastate/backend-operator/internal/render"
	"github.com/infrastate/backend-operator/internal/stateencryption"
	"github.com/infrastate/backend-operator/internal/stateserver"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// revocationWithin bounds how long a revoked output may stay published.
const revocationWithin = 10 * time.Second

// outputGrant is the OutputGrant name of namespace with spec.
func outputGrant(name, namespace string, spec backendsv1alpha1.OutputGrantSpec) *backendsv1alpha1.OutputGrant {
	return &backendsv1alpha1.OutputGrant{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: spec}
}

// toNamespace names one consumer namespace.
func toNamespace(ns string) []backendsv1alpha1.GrantConsumer {
	return []backendsv1alpha1.GrantConsumer{{Namespace: ns}}
}

// grantSpecs is a Describe's producer and consumer namespaces and the
// manager watching both, filled afresh for every spec.
type grantSpecs struct {
	ctx                context.Context //nolint:containedctx // filled before each spec by a BeforeEach
	producer, consumer string
	requests           *writeCounter
}

// eachSpecWithTwoNamespaces gives every spec of the calling container a
// producer and a consumer namespace, and a manager started with opts that
// watches both.
func eachSpecWithTwoNamespaces(opts ...Option) *grantSpecs {
	env := &grantSpecs{}
	BeforeEach(func() {
		ctx, producer := newSpec()
		*env = grantSpecs{ctx: ctx, producer: producer, consumer: newNamespace(ctx)}
		env.requests = startManagerFor(ctx, []string{env.consumer, env.producer}, opts...)
	})
	return env
}

// publishedData is the data of the consumer's ConfigMap and Secret
// network-outputs; an absent one is empty.
func publishedData(ctx context.Context, g Gomega, ns string) (plain map[string]string, sensitive map[string][]byte) {
	cm, secret := &corev1.ConfigMap{}, &corev1.Secret{}
	key := types.NamespacedName{Namespace: ns, Name: "network-outputs"}
	g.Expect(client.IgnoreNotFound(k8sClient.Get(ctx, key, cm))).To(Succeed())
	g.Expect(client.IgnoreNotFound(k8sClient.Get(ctx, key, secret))).To(Succeed())
	return cm.Data, secret.Data
}

// expectGranted waits, within d, until the consumer's objects hold
// exactly the plain and sensitive outputs given (keys only), and
// status.outputs lists them.
func expectGranted(ctx context.Context, d time.Duration, remote *backendsv1alpha1.RemoteState, plain, sensitive []string) {
	GinkgoHelper()
	eventuallyWithin(ctx, d, remote, func(g Gomega) {
		cm, secret := publishedData(ctx, g, remote.Namespace)
		g.Expect(keysOf(cm)).To(ConsistOf(plain))
		g.Expect(keysOf(secret)).To(ConsistOf(sensitive))
		var listed []string
		for _, o := range remote.Status.Outputs {
			listed = append(listed, o.Key)
		}
		g.Expect(listed).To(ConsistOf(append(append([]string{}, plain...), sensitive...)))
	})
}

// keysOf are the keys of m.
func keysOf[V any](m map[string]V) []string {
	keys := []string{}
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// secretContentReads are the manager's requests for the content of the
// Secrets of namespace (reads and lists, not their metadata).
func secretContentReads(requests *writeCounter, namespace string) []apiRead {
	var out []apiRead
	prefix := "/api/v1/namespaces/" + namespace + "/secrets"
	requests.mu.Lock()
	defer requests.mu.Unlock()
	for _, r := range requests.reads {
		if strings.HasPrefix(r.path, prefix) && !strings.Contains(r.accept, "as=PartialObjectMetadata") {
			out = append(out, r)
		}
	}
	return out
}

// expectNothingOfIn asserts that no ConfigMap, Secret, event or
// RemoteState status of namespace holds any of values.
func expectNothingOfIn(ctx context.Context, namespace string, values ...string) {
	GinkgoHelper()
	var documents []any
	configMaps, secrets, events := &corev1.ConfigMapList{}, &corev1.SecretList{}, &eventsv1.EventList{}
	remotes := &backendsv1alpha1.RemoteStateList{}
	for _, list := range []client.ObjectList{configMaps, secrets, events, remotes} {
		Expect(k8sClient.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
		documents = append(documents, list)
	}
	Expect(secrets.Items).NotTo(BeEmpty(), "the scan must see the published Secret")
	for _, doc := range documents {
		data, err := json.Marshal(doc)
		Expect(err).NotTo(HaveOccurred())
		for _, v := range values {
			Expect(string(data)).NotTo(ContainSubstring(v))
			Expect(string(data)).NotTo(ContainSubstring(string(jsonBase64(v))))
		}
	}
}

// jsonBase64 is v as a Secret's data holds it in JSON.
func jsonBase64(v string) []byte {
	data, err := json.Marshal([]byte(v))
	Expect(err).NotTo(HaveOccurred())
	return data[1 : len(data)-1]
}

// relabel sets the labels of namespace to labels.
func relabel(ctx context.Context, namespace string, labels map[string]string) {
	GinkgoHelper()
	ns := &corev1.Namespace{}
	Expect(k8sClient.Get(ctx, types.NamespacedName{Name: namespace}, ns)).To(Succeed())
	before := ns.DeepCopy()
	ns.Labels = labels
	ns.Labels[corev1.LabelMetadataName] = namespace
	Expect(k8sClient.Patch(ctx, ns, client.MergeFrom(before))).To(Succeed())
}

var _ = Describe("A RemoteState reading an OutputGrant's backend", func() {
	Context("under the labeled reference policy", func() {
		spec := eachSpecWithTwoNamespaces(WithReferencePolicy(ReferencePolicyLabeled))

		It("reads nothing of the other namespace without a grant, says the same whether or not the backend exists, "+
			"and heals once granted, under the producer's reference policy", func() {
			ctx, producer, consumer, requests := spec.ctx, spec.producer, spec.consumer, spec.requests
			counting := stateserver.New(stateserver.NewMemoryStore(), stateserver.WithBasicAuth(stateUser, statePassword), stateserver.WithRequestCounting())
			srv := httptest.NewServer(counting)
			DeferCleanup(srv.Close)
			address := srv.URL + "/state/network"
			Expect(basicAuthClient(address).Update(ctx, v4State(3, stackOutputs))).To(Succeed())
			writes := counting.Requests("", "")

			By("the producer's backend, whose Secret lacks the label the policy requires")
			password := suitePassword(producer)
			backend := builders.MakeHttpBackend("network", producer, address).BasicAuth(stateUser, "state-password", "").Obj()
			create(ctx, password, backend)
			eventuallyCondition(ctx, backend, "Stalled", metav1.ConditionTrue, backendsv1alpha1.ReferenceNotAllowedReason)
			readsBefore := len(secretContentReads(requests, producer))

			By("a RemoteState of the backend, and one of a backend that does not exist, without a grant")
			remote := builders.MakeRemoteState("network", consumer, backendsv1alpha1.HttpBackendKind, "network").FromNamespace(producer).Obj()
			ghost := builders.MakeRemoteState("ghost", consumer, backendsv1alpha1.HttpBackendKind, "ghost").FromNamespace(producer).Obj()
			create(ctx, remote, ghost)
			for _, rs := range []*backendsv1alpha1.RemoteState{remote, ghost} {
				want := notGrantedMessage(producer, grants.Request{Consumer: consumer, Backend: rs.Spec.BackendRef.BackendReference, Workspace: "default"})
				Expect(want).To(Equal("No OutputGrant of namespace " + producer + " grants HttpBackend " + rs.Spec.BackendRef.Name +
					" (workspace default) to namespace " + consumer + ": its owners grant it with an OutputGrant in " + producer + " (docs/sharing.md)"))
				eventually(ctx, rs, func(g Gomega) {
					expectKstatusInvariants(g, rs)
					for _, condType := range []string{"Stalled", "Ready", "OutputsReady"} {
						c := expectCondition(g, rs.Status.Conditions, condType, map[bool]metav1.ConditionStatus{true: metav1.ConditionTrue, false: metav1.ConditionFalse}[condType == "Stalled"],
							backendsv1alpha1.ReferenceNotGrantedReason)
						g.Expect(c.Message).To(Equal(want), "the message must not depend on whether the backend exists")
					}
				})
			}

			By("nothing of the producer's namespace was read: no Secret, no state")
			Consistently(func(g Gomega) {
				g.Expect(secretContentReads(requests, producer)).To(HaveLen(readsBefore))
				g.Expect(counting.Requests("", "")).To(Equal(writes))
			}, 2*time.Second, interval).Should(Succeed())

			By("a grant created later heals it by itself; the policy still applies to the producer's Secret")
			create(ctx, outputGrant("to-app", producer, backendsv1alpha1.OutputGrantSpec{To: toNamespace(consumer), Outputs: []string{"vpc_id"}}))
			eventuallyWithin(ctx, revocationWithin, remote, func(g Gomega) {
				expectConditionSaying(g, remote.Status.Conditions, "Stalled", metav1.ConditionTrue, backendsv1alpha1.BackendNotReadyReason,
					"HttpBackend network of namespace "+producer+" cannot be used (ReferenceNotAllowed): its owners see why in its status")
			})
			Expect(len(secretContentReads(requests, producer))).To(BeNumerically(">", readsBefore),
				"the recording must see the reads a granted RemoteState makes")
			eventuallyCondition(ctx, ghost, "Stalled", metav1.ConditionTrue, backendsv1alpha1.BackendNotFoundReason)

			By("labelling the producer's Secret heals the backend and the RemoteState, through the watch of that Secret")
			getObject(ctx, Default, password)
			password.Labels = map[string]string{backendsv1alpha1.AllowReferenceLabel: "true"}
			Expect(k8sClient.Update(ctx, password)).To(Succeed())
			expectGranted(ctx, 15*time.Second, remote, []string{"vpc_id"}, nil)
			expectNothingOfIn(ctx, consumer, statePassword)
		})
	})

	Context("watching both namespaces", func() {
		spec := eachSpecWithTwoNamespaces()

		// producerStack creates the producer's backend of the suite's state
		// server, holding stackOutputs.
		producerStack := func() {
			GinkgoHelper()
			seedState(spec.ctx, stateURL(spec.producer), v4State(5, stackOutputs))
			createPassword(spec.ctx, spec.producer)
			create(spec.ctx, makeStateBackend("network", spec.producer).Obj())
		}

		It("publishes only the granted outputs, sensitive ones only when named, and removes them within seconds "+
			"when the grant is narrowed or deleted", func() {
			ctx, producer, consumer := spec.ctx, spec.producer, spec.consumer
			producerStack()
			remote := builders.MakeRemoteState("network", consumer, backendsv1alpha1.HttpBackendKind, "network").FromNamespace(producer).Obj()
			grant := outputGrant("to-app", producer, backendsv1alpha1.OutputGrantSpec{
				To: toNamespace(consumer), Outputs: []string{"vpc_id", "subnets", "db_password"}})
			create(ctx, remote, grant)

			By("a sensitive output named in outputs only is not published")
			expectGranted(ctx, timeout, remote, []string{"vpc_id", "subnets"}, nil)
			eventually(ctx, remote, func(g Gomega) {
				expectKstatusInvariants(g, remote)
				expectConditionSaying(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionTrue, backendsv1alpha1.OutputsPublishedReason,
					"namespace "+producer+" grants outputs db_password, subnets, vpc_id (OutputGrant to-app)")
				expectCondition(g, remote.Status.Conditions, "Ready", metav1.ConditionTrue, backendsv1alpha1.SucceededReason)
				g.Expect(remote.Status.State).To(HaveValue(And(HaveField("Serial", int64(5)), HaveField("OutputCount", int32(0)), HaveField("SizeBytes", int64(0)))),
					"the status tells nothing of the outputs not granted")
			})
			cm := renderedConfigMap(ctx, Default, consumer, "network-outputs")
			expectControlledBy(Default, cm, remote, "RemoteState")
			Expect(cm.Data).To(Equal(map[string]string{"vpc_id": "vpc-0a1b", "subnets": `["10.0.1.0/24","10.0.2.0/24"]`}))
			Eventually(func(g Gomega) {
				g.Expect(remoteStateSeries(g, lastSuccessMetric, consumer, "network")).To(BeTrue())
			}, timeout, interval).Should(Succeed(), "the metrics carry the RemoteState's own namespace and name")

			By("naming it in sensitiveOutputs publishes it, to the Secret only")
			updateSpec(ctx, grant, func() { grant.Spec.SensitiveOutputs = []string{"db_password"} })
			expectGranted(ctx, revocationWithin, remote, []string{"vpc_id", "subnets"}, []string{"db_password"})
			Expect(renderedSecret(ctx, Default, consumer, "network-outputs").Data).To(HaveKeyWithValue("db_password", []byte("p@ss-w0rd-XYZ")))

			By("narrowing the grant removes what it dropped, within seconds")
			updateSpec(ctx, grant, func() { grant.Spec.Outputs, grant.Spec.SensitiveOutputs = []string{"vpc_id"}, nil })
			expectGranted(ctx, revocationWithin, remote, []string{"vpc_id"}, nil)
			Eventually(func(g Gomega) []string {
				return eventMessages(ctx, g, consumer, backendsv1alpha1.ReferenceNotGrantedReason)
			}, timeout, interval).Should(ContainElement(And(ContainSubstring("keys db_password from Secret network-outputs"), ContainSubstring("subnets"))))

			By("deleting the grant removes every output within seconds, and says why")
			Expect(k8sClient.Delete(ctx, grant)).To(Succeed())
			expectGranted(ctx, revocationWithin, remote, nil, nil)
			eventually(ctx, remote, func(g Gomega) {
				expectKstatusInvariants(g, remote)
				expectCondition(g, remote.Status.Conditions, "Stalled", metav1.ConditionTrue, backendsv1alpha1.ReferenceNotGrantedReason)
				expectCondition(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionFalse, backendsv1alpha1.ReferenceNotGrantedReason)
			})
			expectNothingOfIn(ctx, consumer, statePassword, "p@ss-w0rd-XYZ")
		})

		It("refuses, before reading, selected outputs no grant names, and a selected sensitive one granted as plain", func() {
			ctx, producer, consumer := spec.ctx, spec.producer, spec.consumer
			producerStack()
			grant := outputGrant("to-app", producer, backendsv1alpha1.OutputGrantSpec{To: toNamespace(consumer), Outputs: []string{"vpc_id", "db_password"}})
			remote := builders.MakeRemoteState("network", consumer, backendsv1alpha1.HttpBackendKind, "network").FromNamespace(producer).
				Outputs(backendsv1alpha1.OutputSelector{Name: "vpc_id"}, backendsv1alpha1.OutputSelector{Name: "azs"}).Obj()
			create(ctx, grant, remote)
			eventually(ctx, remote, func(g Gomega) {
				expectConditionSaying(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionFalse, backendsv1alpha1.ReferenceNotGrantedReason,
					"but not outputs azs, which spec.outputs selects")
				expectCondition(g, remote.Status.Conditions, "Stalled", metav1.ConditionTrue, backendsv1alpha1.ReferenceNotGrantedReason)
			})

			updateSpec(ctx, remote, func() { remote.Spec.Outputs[1].Name = "db_password" })
			eventually(ctx, remote, func(g Gomega) {
				expectConditionSaying(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionFalse, backendsv1alpha1.ReferenceNotGrantedReason,
					"Outputs db_password, which spec.outputs selects, are sensitive")
			})
			plain, sensitive := publishedData(ctx, Default, consumer)
			Expect(plain).To(BeEmpty())
			Expect(sensitive).To(BeEmpty())

			updateSpec(ctx, remote, func() { remote.Spec.Outputs = remote.Spec.Outputs[:1] })
			expectGranted(ctx, timeout, remote, []string{"vpc_id"}, nil)

			By("a backend gone, while still granted, keeps what was published: only a revocation removes it")
			Expect(k8sClient.Delete(ctx, builders.MakeHttpBackend("network", producer, "").Obj())).To(Succeed())
			eventually(ctx, remote, func(g Gomega) {
				expectConditionSaying(g, remote.Status.Conditions, "Stalled", metav1.ConditionTrue, backendsv1alpha1.BackendNotFoundReason,
					"HttpBackend network does not exist in namespace "+producer+", whose OutputGrants grant it to namespace "+consumer)
			})
			Consistently(func(g Gomega) {
				plain, _ := publishedData(ctx, g, consumer)
				g.Expect(plain).To(Equal(map[string]string{"vpc_id": "vpc-0a1b"}))
			}, 2*time.Second, interval).Should(Succeed())
		})

		It("publishes an encrypted state of the producer without its passphrase reaching the consumer, which pays for the decryption", func() {
			ctx, producer, consumer := spec.ctx, spec.producer, spec.consumer
			passphrase := render.Passphrase{SecretName: "pass", Value: []byte(kdfPrimary)}
			doc, err := encryptedState([]stateencryption.Key{passphraseKey(passphrase)}, 0, stateencryption.MinIterations, 32, 3, "shared")
			Expect(err).NotTo(HaveOccurred())
			address, _ := countingStateServer(func() []byte { return doc })
			// Not probed: the producer's backend derives no key, every
			// derivation is the consumer's read.
			backend := builders.MakeHttpBackend("network", producer, address).ProbeInterval(0).Encryption("pass").Obj()
			create(ctx,
				builders.MakeSecret("pass", producer).Data(map[string]string{backendsv1alpha1.DefaultPassphraseKey: kdfPrimary}).Obj(),
				backend,
				outputGrant("to-app", producer, backendsv1alpha1.OutputGrantSpec{To: toNamespace(consumer)}),
				builders.MakeRemoteState("network", consumer, backendsv1alpha1.HttpBackendKind, "network").FromNamespace(producer).Obj())
			remote := builders.MakeRemoteState("network", consumer, "", "").Obj()
			expectGranted(ctx, timeout, remote, []string{"region"}, nil)
			Expect(renderedConfigMap(ctx, Default, consumer, "network-outputs").Data).To(Equal(map[string]string{"region": "eu-west-1"}))
			getObject(ctx, Default, remote)
			Expect(remote.Status.State).To(HaveValue(HaveField("Encrypted", true)))

			By("the key derivation counts against the consumer's namespace")
			Eventually(func(g Gomega) {
				used, ok := budgetUsed(g, "key_derivation_cpu", consumer)
				g.Expect(ok).To(BeTrue())
				g.Expect(used).To(BeNumerically(">", 0))
			}, timeout, interval).Should(Succeed())
			used, _ := budgetUsed(Default, "key_derivation_cpu", producer)
			Expect(used).To(BeZero())

			expectNothingOfIn(ctx, consumer, kdfPrimary)
		})
	})

	Context("with the labels of namespaces", func() {
		spec := eachSpecWithTwoNamespaces()

		It("follows a selector grant as the consumer's namespace is labelled, unlabelled and labelled again", func() {
			ctx, producer, consumer := spec.ctx, spec.producer, spec.consumer
			seedState(ctx, stateURL(producer), v4State(2, stackOutputs))
			createPassword(ctx, producer)
			create(ctx, makeStateBackend("network", producer).Obj(),
				outputGrant("to-platform", producer, backendsv1alpha1.OutputGrantSpec{
					To:      []backendsv1alpha1.GrantConsumer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "platform"}}}},
					Outputs: []string{"vpc_id", "azs"}}))
			remote := builders.MakeRemoteState("network", consumer, backendsv1alpha1.HttpBackendKind, "network").FromNamespace(producer).Obj()
			create(ctx, remote)
			eventuallyCondition(ctx, remote, "Stalled", metav1.ConditionTrue, backendsv1alpha1.ReferenceNotGrantedReason)

			relabel(ctx, consumer, map[string]string{"team": "platform"})
			expectGranted(ctx, revocationWithin, remote, []string{"vpc_id", "azs"}, nil)

			relabel(ctx, consumer, map[string]string{"team": "web"})
			expectGranted(ctx, revocationWithin, remote, nil, nil)
			eventuallyCondition(ctx, remote, "Stalled", metav1.ConditionTrue, backendsv1alpha1.ReferenceNotGrantedReason)

			relabel(ctx, consumer, map[string]string{"team": "platform"})
			expectGranted(ctx, revocationWithin, remote, []string{"vpc_id", "azs"}, nil)
		})
	})

	It("reports a backend of a namespace the manager does not watch, and reads nothing there", func() {
		ctx, consumer := newSpec()
		producer := newNamespace(ctx)
		startManager(ctx, consumer)
		create(ctx, outputGrant("to-app", producer, backendsv1alpha1.OutputGrantSpec{To: toNamespace(consumer)}))
		remote := builders.MakeRemoteState("network", consumer, backendsv1alpha1.HttpBackendKind, "network").FromNamespace(producer).Obj()
		create(ctx, remote)
		eventually(ctx, remote, func(g Gomega) {
			expectKstatusInvariants(g, remote)
			expectConditionSaying(g, remote.Status.Conditions, "Stalled", metav1.ConditionTrue, backendsv1alpha1.NamespaceNotWatchedReason,
				"The manager does not watch namespace "+producer)
			expectCondition(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionFalse, backendsv1alpha1.NamespaceNotWatchedReason)
		})
	})
})

// remoteStateSeries reports whether the manager's registry serves the
// series name for the RemoteState namespace/name.
func remoteStateSeries(g Gomega, name, namespace, remote string) bool {
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if _, ok := seriesKey(f.GetName(), m, namespace, remote); ok && f.GetName() == name {
				return true
			}
		}
	}
	return false
}
