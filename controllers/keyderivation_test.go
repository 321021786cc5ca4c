package controllers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateencryption"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// kdfProbeInterval is how often the backends of the key derivation spec
// probe: the API's least interval.
const kdfProbeInterval = 10 * time.Second

// countingStateServer serves GETs of a state with the document state
// returns for each, and counts them.
func countingStateServer(state func() []byte) (address string, gets *atomic.Int64) {
	gets = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		gets.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(state())
	}))
	DeferCleanup(srv.Close)
	return srv.URL + "/state", gets
}

// budgetUsed is infrastate_budget_used{budget, namespace} as the
// manager's registry serves it, and whether it has the series.
func budgetUsed(g Gomega, budgetName, namespace string) (float64, bool) {
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "infrastate_budget_used" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["budget"] == budgetName && labels["namespace"] == namespace {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

var _ = Describe("The key derivation CPU budget", func() {
	It("refuses a tenant's key derivations beyond its share, and other tenants' probes stay on time", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		DeferCleanup(cancel)
		hostile, victim := newNamespace(ctx), newNamespace(ctx)
		// A share smaller than one probe of the attack (two derivations
		// of about 0.1 CPU-second): once a probe used it, none completes
		// again within the spec, whose minute drains too little.
		budgets := DefaultBudgets()
		budgets.KeyDerivationPerNamespace = 200 * time.Millisecond
		budgets.KeyDerivationTotal = 2 * time.Second
		startManagerFor(ctx, []string{hostile, victim}, WithBudgets(budgets))
		keys := kdfEncryption().keys()
		for _, ns := range []string{hostile, victim} {
			create(ctx,
				builders.MakeSecret("pass", ns).Data(map[string]string{backendsv1alpha1.DefaultPassphraseKey: kdfPrimary}).Obj(),
				builders.MakeSecret("pass-old", ns).Data(map[string]string{backendsv1alpha1.DefaultPassphraseKey: kdfFallback}).Obj())
		}
		rotation := backendsv1alpha1.EncryptionFallback{PassphraseSecretRef: &backendsv1alpha1.SecretKeyRef{Name: "pass-old"}}

		By("a tenant whose server answers each read with a state written anew, for the primary and the fallback passphrase")
		attack, _ := countingStateServer(func() []byte {
			// A fresh 1 KiB salt for each key, the fallback's opening the
			// payload: each read derives twice. Fewer iterations than the
			// bound keep the spec quick; the share is as small.
			doc, err := encryptedState(keys, 1, stateencryption.MinIterations, stateencryption.MaxSaltLength, 7, "attack")
			Expect(err).NotTo(HaveOccurred())
			return doc
		})
		var attackers []*backendsv1alpha1.HttpBackend
		for _, name := range []string{"attack-a", "attack-b"} {
			b := builders.MakeHttpBackend(name, hostile, attack).ProbeInterval(kdfProbeInterval).Encryption("pass").EncryptionFallback(rotation).Obj()
			attackers = append(attackers, b)
			create(ctx, b)
		}
		remote := builders.MakeRemoteState("attack", hostile, backendsv1alpha1.HttpBackendKind, "attack-a").ProbeInterval(kdfProbeInterval).Obj()
		create(ctx, remote)

		By("another tenant with an encrypted state its key cache serves, and a plain one")
		cachedDoc, err := encryptedState(keys, 0, stateencryption.MinIterations, 32, 3, "cached")
		Expect(err).NotTo(HaveOccurred())
		cachedAddress, cachedGets := countingStateServer(func() []byte { return cachedDoc })
		plainAddress, plainGets := countingStateServer(func() []byte {
			return []byte(`{"version":4,"terraform_version":"1.12.6","serial":2,"lineage":"plain","outputs":{},"resources":[]}`)
		})
		cached := builders.MakeHttpBackend("cached", victim, cachedAddress).ProbeInterval(kdfProbeInterval).Encryption("pass").EncryptionFallback(rotation).Obj()
		plain := builders.MakeHttpBackend("plain", victim, plainAddress).ProbeInterval(kdfProbeInterval).Obj()
		create(ctx, cached, plain)

		By("the attacking tenant's reads are refused, naming the budget and its flag, not a wrong passphrase")
		for _, b := range attackers {
			Eventually(func(g Gomega) {
				getObject(ctx, g, b)
				expectConditionSaying(g, b.Status.Conditions, "StateReachable", metav1.ConditionFalse, backendsv1alpha1.BudgetExceededReason,
					"namespace "+hostile+" has used", "key derivation CPU per minute", "(--key-derivation-cpu-per-namespace)",
					"resume as the minute's use drains")
			}, time.Minute, interval).Should(Succeed(), "HttpBackend %s", b.Name)
		}
		Eventually(func(g Gomega) {
			getObject(ctx, g, remote)
			expectConditionSaying(g, remote.Status.Conditions, "OutputsReady", metav1.ConditionFalse, backendsv1alpha1.BudgetExceededReason,
				"(--key-derivation-cpu-per-namespace)")
		}, time.Minute, interval).Should(Succeed())
		Eventually(func(g Gomega) {
			used, ok := budgetUsed(g, "key_derivation_cpu", hostile)
			g.Expect(ok).To(BeTrue(), "no infrastate_budget_used series for namespace %s", hostile)
			g.Expect(used).To(BeNumerically(">=", budgets.KeyDerivationPerNamespace.Seconds()/2))
		}, timeout, interval).Should(Succeed())

		By("the other tenant's backends stay Ready, and are probed at their interval")
		probed := map[string]int64{"cached": cachedGets.Load(), "plain": plainGets.Load()}
		Eventually(func(g Gomega) {
			g.Expect(cachedGets.Load()).To(BeNumerically(">=", probed["cached"]+2))
			g.Expect(plainGets.Load()).To(BeNumerically(">=", probed["plain"]+2))
		}, 4*kdfProbeInterval, interval).Should(Succeed())
		for _, b := range []*backendsv1alpha1.HttpBackend{cached, plain} {
			getObject(ctx, Default, b)
			expectCondition(Default, b.Status.Conditions, "Ready", metav1.ConditionTrue, backendsv1alpha1.SucceededReason)
			expectCondition(Default, b.Status.Conditions, "StateReachable", metav1.ConditionTrue, backendsv1alpha1.ReachableReason)
		}
		Expect(cached.Status.State.Encrypted).To(BeTrue())

		By("the attacking tenant stays refused: its reads hold no share")
		for _, b := range attackers {
			getObject(ctx, Default, b)
			expectCondition(Default, b.Status.Conditions, "StateReachable", metav1.ConditionFalse, backendsv1alpha1.BudgetExceededReason)
		}
		for _, ns := range []string{hostile, victim} {
			expectNoSecretsIn(ctx, ns, []string{kdfPrimary, kdfFallback})
		}
	})
})
