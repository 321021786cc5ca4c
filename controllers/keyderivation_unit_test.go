package controllers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/budget"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/render"
	"github.com/infrastate/backend-operator/internal/stateencryption"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// Passphrases of the key derivation tests, which no message may quote.
const (
	kdfPrimary  = "the primary passphrase of team-a"
	kdfFallback = "the fallback passphrase of team-a"
)

// kdfEncryption is a spec.encryption of a primary and a fallback
// passphrase, read.
func kdfEncryption() *stateEncryption {
	fallback := render.Passphrase{SecretName: "pass-old", Value: []byte(kdfFallback)}
	return &stateEncryption{secrets: render.EncryptionSecrets{
		Passphrase: render.Passphrase{SecretName: "pass", Value: []byte(kdfPrimary)},
		Fallback:   &fallback,
	}}
}

// refusedRead is the error a read returns when the budget refused a
// derivation: exceeded wrapped by the keyring and by statefile, as they
// wrap it.
func refusedRead(exceeded *budget.ExceededError) error {
	return fmt.Errorf("reading state: %w: %w", statefile.ErrDecrypt,
		fmt.Errorf("key provider %q: %w: %w", "secret_pass_passphrase_1a2b3c4d", stateencryption.ErrDerivationRefused, exceeded))
}

// A namespace's share and the total, used up.
var (
	errShareUsed = &budget.ExceededError{Budget: "key derivation CPU", Namespace: "team-a", Used: int64(6900 * time.Millisecond), Wanted: 1,
		Limit: int64(6 * time.Second), Flag: KeyDerivationPerNamespaceFlag}
	errTotalUsed = &budget.ExceededError{Budget: "key derivation CPU", Namespace: "team-a", Used: int64(16 * time.Second), Wanted: 1,
		Limit: int64(15 * time.Second), Total: true, Flag: KeyDerivationTotalFlag}
)

// derivationNext is the end of the message of a refused derivation, for
// flag.
func derivationNext(flag string) string {
	return "No passphrase was found wrong: probes and reads resume as the minute's use drains, and a state whose key was derived " +
		"before is read at no cost meanwhile. Every state written anew has a new salt and costs one key derivation per passphrase, " +
		"up to 2000000 PBKDF2 iterations each: check that the state server does not answer each read with a new salt, and that the " +
		"runners keep OpenTofu's default key parameters; the platform team sets the budget with --" + flag
}

// TestRefusedDerivationIsBudgetExceeded checks how each kind reports a
// read whose key derivation the budget refused: BudgetExceeded, never
// DecryptionFailed, with a message naming the budget and its flag,
// saying that it clears by itself, and quoting no passphrase.
func TestRefusedDerivationIsBudgetExceeded(t *testing.T) {
	dec := stateDecrypter{encryption: kdfEncryption(), namespace: "team-a"}
	explained := dec.explain(refusedRead(errShareUsed))
	shareMessage := "Deriving the key of the encrypted state was refused: namespace team-a has used 6.9s of its 6.0s share of " +
		"key derivation CPU per minute (--key-derivation-cpu-per-namespace). " + derivationNext(KeyDerivationPerNamespaceFlag)
	cases := map[string]struct {
		obs conditions.Observation
		// wantMessage is the whole message; "" checks only that it
		// names the flag and ends with the next step.
		wantMessage string
	}{
		"an HttpBackend's probe": {
			obs:         stateObservation(nil, explained),
			wantMessage: shareMessage,
		},
		"a CosBackend's probe": {
			obs: stateObjectFailure(explained),
			wantMessage: "The bucket exists, but its state object cannot be used: namespace team-a has used 6.9s of its 6.0s share of " +
				"key derivation CPU per minute (--key-derivation-cpu-per-namespace). " + derivationNext(KeyDerivationPerNamespaceFlag),
		},
		"a RemoteState's read": {
			obs:         contentFailure(explained),
			wantMessage: shareMessage,
		},
		"a RemoteState's read that failed as a whole": {
			obs:         probeFailure(httpFailures, explained),
			wantMessage: shareMessage,
		},
		"the total used up": {
			obs: stateObservation(nil, dec.explain(refusedRead(errTotalUsed))),
			wantMessage: "Deriving the key of the encrypted state was refused: all namespaces together have used 16.0s of the manager's " +
				"15.0s of key derivation CPU per minute (--key-derivation-cpu-total). " + derivationNext(KeyDerivationTotalFlag),
		},
		"a refusal not explained yet is no failed decryption either": {
			// The budget's own error, in its words, after the wrappers'.
			obs: probeFailure(httpFailures, refusedRead(errShareUsed)),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.BudgetExceededReason, Message: tc.wantMessage}
			if tc.wantMessage == "" {
				if !strings.Contains(tc.obs.Message, "(--key-derivation-cpu-per-namespace)") ||
					!strings.HasSuffix(tc.obs.Message, derivationNext(KeyDerivationPerNamespaceFlag)) {
					t.Errorf("message %q does not name the flag and end with the next step", tc.obs.Message)
				}
				want.Message = tc.obs.Message
			}
			if diff := cmp.Diff(want, tc.obs); diff != "" {
				t.Errorf("observation (-want +got):\n%s", diff)
			}
			for _, secret := range []string{kdfPrimary, kdfFallback} {
				if strings.Contains(tc.obs.Message, secret) {
					t.Errorf("the message quotes a passphrase: %s", tc.obs.Message)
				}
			}
		})
	}
	if errors.Is(explained, statefile.ErrDecrypt) {
		t.Errorf("the explained refusal %v still reads as a failed decryption", explained)
	}
	if v, ok := reachableValue(&metav1.Condition{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.BudgetExceededReason}); v != 1 || !ok {
		t.Errorf("infrastate_backend_reachable of a refused derivation = %v, %t; want 1: the server answered", v, ok)
	}
}

// kdfStep is one read of TestDecrypterChargesKeyDerivation.
type kdfStep struct {
	// advance moves the budget's clock before the read.
	advance time.Duration
	// namespace reads state, a key of states.
	namespace, state string
	// wantRefused is whether the read is refused by the budget;
	// wantCharged whether the namespace's use grows.
	wantRefused, wantCharged bool
}

// TestDecrypterChargesKeyDerivation reads encrypted states through the
// stateDecrypter of the controllers, with a share smaller than one
// derivation: every derivation is charged to the reading namespace, the
// next one is refused at once, without holding a decryption slot after,
// while a cached key still reads its state and another namespace's
// share is its own; the share comes back as the window drains.
func TestDecrypterChargesKeyDerivation(t *testing.T) {
	enc := kdfEncryption()
	keys := enc.keys()
	states := map[string][]byte{}
	for name, opener := range map[string]int{"unchanged": 0, "rewritten": 0, "rewritten again": 0, "other namespace's": 0, "rotated": 1} {
		doc, err := encryptedState(keys, opener, stateencryption.MinIterations, 32, 3, "l")
		if err != nil {
			t.Fatal(err)
		}
		states[name] = doc
	}
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0))
	// The total never binds here: one derivation under -race on a busy
	// machine costs most of a second, and this test is about each
	// namespace's share.
	shares := budget.New(budget.Config{Name: "key derivation CPU", Unit: budget.Nanoseconds, PerNamespace: int64(10 * time.Millisecond),
		PerNamespaceFlag: KeyDerivationPerNamespaceFlag, Total: int64(time.Hour), TotalFlag: KeyDerivationTotalFlag, Window: time.Minute}, clk)
	slots := newDecryptions(4)

	steps := []kdfStep{
		{namespace: "a", state: "unchanged", wantCharged: true},
		{namespace: "a", state: "rewritten", wantRefused: true},
		{namespace: "a", state: "unchanged"}, // its key is cached: not refused, not charged
		{namespace: "b", state: "other namespace's", wantCharged: true},
		{namespace: "c", state: "rotated", wantRefused: true, wantCharged: true}, // the primary runs, the fallback is refused
		// A day drains 14.4s of a namespace's use: more than any derivation costs.
		{advance: 24 * time.Hour, namespace: "a", state: "rewritten again", wantCharged: true},
	}
	for i, st := range steps {
		clk.SetTime(clk.Now().Add(st.advance))
		before := shares.Used(st.namespace)
		dec := stateDecrypter{encryption: enc, decryptions: slots, derivations: shares, namespace: st.namespace}
		_, err := statefile.ReadSummary(bytes.NewReader(states[st.state]), dec.forRead(t.Context()))
		err = dec.explain(err)
		_, refused := errors.AsType[*derivationRefusedError](err)
		switch {
		case refused != st.wantRefused:
			t.Errorf("step %d (%s reads the %s state): error %v, want refused %t", i, st.namespace, st.state, err, st.wantRefused)
		case !refused && err != nil:
			t.Errorf("step %d (%s reads the %s state): %v", i, st.namespace, st.state, err)
		}
		if charged := shares.Used(st.namespace) > before; charged != st.wantCharged {
			t.Errorf("step %d (%s reads the %s state): use went from %s to %s, want charged %t",
				i, st.namespace, st.state, time.Duration(before), time.Duration(shares.Used(st.namespace)), st.wantCharged)
		}
		if slots.inUse != 0 {
			t.Errorf("step %d: %d decryption slots still held after the read", i, slots.inUse)
		}
	}
}

// TestDerivingNamespaceKeepsOthersReading holds one namespace's
// decryption slot, as a read deriving a key at the bounds does for about
// a second per passphrase: another namespace's encrypted state, whose key
// is cached, is read meanwhile, and a plain state takes no slot at all.
func TestDerivingNamespaceKeepsOthersReading(t *testing.T) {
	enc := kdfEncryption()
	doc, err := encryptedState(enc.keys(), 0, stateencryption.MinIterations, 32, 3, "l")
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0))
	shares := newTenantBudgets(DefaultBudgets(), clk).keyDerivation
	slots := newDecryptions(DefaultMaxConcurrentDecryptions)
	victim := stateDecrypter{encryption: enc, decryptions: slots, derivations: shares, namespace: "victim"}
	if _, err := statefile.ReadSummary(bytes.NewReader(doc), victim.forRead(t.Context())); err != nil {
		t.Fatalf("the first read, which derives the key: %v", err)
	}
	derived := shares.Used("victim")

	// The hostile namespace derives: it holds its one slot.
	release, err := slots.acquire(t.Context(), "hostile")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := statefile.ReadSummary(bytes.NewReader(doc), victim.forRead(ctx)); err != nil {
		t.Errorf("reading a state whose key is cached while another namespace derives: %v", err)
	}
	if got := shares.Used("victim"); got != derived {
		t.Errorf("the cached read charged %s", time.Duration(got-derived))
	}
	plain := stateDecrypter{namespace: "victim"}
	if d := plain.forRead(ctx); d != nil {
		t.Errorf("a backend without encryption reads through a decryption slot: %+v", d)
	}
	// The hostile namespace's next read waits for its own slot, not for
	// anyone else's.
	short, cancelShort := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancelShort()
	hostile := stateDecrypter{encryption: enc, decryptions: slots, derivations: shares, namespace: "hostile"}
	if _, err := statefile.ReadSummary(bytes.NewReader(doc), hostile.forRead(short)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second read of the deriving namespace: %v, want it to wait for the namespace's slot", err)
	}
}
