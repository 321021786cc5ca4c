package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/render"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/stateencryption"
	"github.com/infrastate/backend-operator/internal/statefile"
	"github.com/infrastate/backend-operator/internal/testenv"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

func TestResolveEncryption(t *testing.T) {
	const (
		current  = "current-passphrase-0123"
		previous = "previous-passphrase-456"
	)
	secrets := []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pass"}, Data: map[string][]byte{"passphrase": []byte(current), "old": []byte(previous)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "short"}, Data: map[string][]byte{"passphrase": []byte("fifteen-bytes!!")}},
	}
	ref := func(name, key string) backendsv1alpha1.SecretKeyRef {
		return backendsv1alpha1.SecretKeyRef{Name: name, Key: key}
	}
	cases := map[string]struct {
		enc        *backendsv1alpha1.StateEncryption
		want       *render.EncryptionSecrets
		wantReason string
	}{
		"no encryption": {},
		"the default key": {enc: &backendsv1alpha1.StateEncryption{PassphraseSecretRef: ref("pass", "")},
			want: &render.EncryptionSecrets{Passphrase: render.Passphrase{SecretName: "pass", Key: "passphrase", Value: []byte(current)}}},
		"a rotation with unencrypted state still read": {enc: &backendsv1alpha1.StateEncryption{PassphraseSecretRef: ref("pass", "passphrase"),
			Fallback: &backendsv1alpha1.EncryptionFallback{PassphraseSecretRef: new(ref("pass", "old")), Unencrypted: true}},
			want: &render.EncryptionSecrets{
				Passphrase:          render.Passphrase{SecretName: "pass", Key: "passphrase", Value: []byte(current)},
				Fallback:            &render.Passphrase{SecretName: "pass", Key: "old", Value: []byte(previous)},
				FallbackUnencrypted: true,
			}},
		"a passphrase shorter than 16 bytes": {enc: &backendsv1alpha1.StateEncryption{PassphraseSecretRef: ref("short", "")},
			wantReason: backendsv1alpha1.InvalidPassphraseReason},
		"a short previous passphrase": {enc: &backendsv1alpha1.StateEncryption{PassphraseSecretRef: ref("pass", ""),
			Fallback: &backendsv1alpha1.EncryptionFallback{PassphraseSecretRef: new(ref("short", ""))}},
			wantReason: backendsv1alpha1.InvalidPassphraseReason},
		"a missing key": {enc: &backendsv1alpha1.StateEncryption{PassphraseSecretRef: ref("pass", "nope")},
			wantReason: backendsv1alpha1.SecretKeyMissingReason},
		"a missing Secret": {enc: &backendsv1alpha1.StateEncryption{PassphraseSecretRef: ref("gone", "")},
			wantReason: backendsv1alpha1.SecretNotFoundReason},
	}
	for name, tt := range cases {
		t.Run(name, func(t *testing.T) {
			builder := fake.NewClientBuilder().WithScheme(testenv.Scheme())
			for _, s := range secrets {
				builder = builder.WithObjects(s.DeepCopy())
			}
			c := builder.Build()
			refs := referenceReader{reader: c, metadata: c, contents: related.NewContents(), namespace: "ns", policy: ReferencePolicyNamespace}
			got, err := resolveEncryption(t.Context(), refs, tt.enc)
			if tt.wantReason != "" {
				se, ok := conditions.AsStall(err)
				if !ok || se.Reason != tt.wantReason {
					t.Fatalf("resolveEncryption() error %v, want a %s stall", err, tt.wantReason)
				}
				for _, s := range []string{current, previous, "fifteen-bytes!!"} {
					if strings.Contains(se.Message, s) {
						t.Errorf("the stall quotes a passphrase: %s", se.Message)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == nil {
				if got != nil {
					t.Errorf("resolveEncryption() = %+v, want nil", got)
				}
				return
			}
			if diff := cmp.Diff(*tt.want, got.secrets); diff != "" {
				t.Errorf("resolveEncryption() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStateEncryptionKeysAndInputs(t *testing.T) {
	primary := render.Passphrase{SecretName: "pass", Key: "passphrase", Value: []byte("current-passphrase-0123")}
	old := render.Passphrase{SecretName: "pass", Key: "old", Value: []byte("previous-passphrase-456")}
	rotating := &stateEncryption{secrets: render.EncryptionSecrets{Passphrase: primary, Fallback: &old}}
	want := []stateencryption.Key{
		{Provider: stateencryption.KeyProviderName("pass", "passphrase"), Passphrase: primary.Value},
		{Provider: stateencryption.KeyProviderName("pass", "old"), Passphrase: old.Value},
	}
	if diff := cmp.Diff(want, rotating.keys()); diff != "" {
		t.Errorf("keys() mismatch (-want +got):\n%s", diff)
	}

	// Every change of what decrypts or renders changes the inputs.
	variants := map[string]*stateEncryption{
		"none":             nil,
		"primary":          {secrets: render.EncryptionSecrets{Passphrase: primary}},
		"rotating":         rotating,
		"with unencrypted": {secrets: render.EncryptionSecrets{Passphrase: primary, FallbackUnencrypted: true}},
		"other primary":    {secrets: render.EncryptionSecrets{Passphrase: old}},
	}
	seen := map[string]string{}
	for name, v := range variants {
		fp := fingerprint(v.inputs()...)
		if other, ok := seen[fp]; ok {
			t.Errorf("%s and %s have the same inputs", name, other)
		}
		seen[fp] = name
	}
	if (stateDecrypter{}).forRead(t.Context()) != nil {
		t.Error("forRead() without encryption is not nil: encrypted states would need a key")
	}
}

func TestEncryptionReferences(t *testing.T) {
	got := encryptionReferences(&backendsv1alpha1.StateEncryption{
		PassphraseSecretRef: backendsv1alpha1.SecretKeyRef{Name: "new"},
		Fallback:            &backendsv1alpha1.EncryptionFallback{PassphraseSecretRef: &backendsv1alpha1.SecretKeyRef{Name: "old"}},
	})
	if diff := cmp.Diff([]string{related.SecretReference("new"), related.SecretReference("old")}, got); diff != "" {
		t.Errorf("encryptionReferences() mismatch (-want +got):\n%s", diff)
	}
	if got := encryptionReferences(nil); got != nil {
		t.Errorf("encryptionReferences(nil) = %v", got)
	}
}

// TestDecryptionsBound holds slots and checks that the next read waits for
// one, until its context ends, and gets one once a slot is released: at
// most the total across namespaces, and one per namespace, so that a
// tenant whose server is slow holds one slot, not every one.
func TestDecryptionsBound(t *testing.T) {
	d := newDecryptions(2)
	waits := func(ns string) bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		release, err := d.acquire(ctx, ns)
		if err == nil {
			release()
			return false
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("acquire(%s): error %v, want the context's", ns, err)
		}
		return true
	}
	releaseA, err := d.acquire(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if !waits("a") {
		t.Error("a namespace took a second slot")
	}
	releaseB, err := d.acquire(t.Context(), "b")
	if err != nil {
		t.Fatalf("another namespace waits behind the first: %v", err)
	}
	if !waits("c") {
		t.Error("a third slot was given with a total of 2")
	}

	// A waiter wakes when a slot is released.
	got := make(chan error, 1)
	go func() {
		release, err := d.acquire(t.Context(), "c")
		if err == nil {
			release()
		}
		got <- err
	}()
	releaseA()
	releaseA() // releasing twice gives back one slot
	if err := <-got; err != nil {
		t.Fatalf("acquire after a release: %v", err)
	}
	releaseB()
	if d.inUse != 0 || len(d.held) != 0 {
		t.Errorf("after every release: %d slots in use, held %v; want none", d.inUse, d.held)
	}
}

func TestContentFailureOfEncryptedStates(t *testing.T) {
	cases := map[string]struct {
		err  error
		want string
	}{
		"encrypted, no encryption configured": {err: fmt.Errorf("x: %w", statefile.ErrEncrypted), want: backendsv1alpha1.StateEncryptedReason},
		"no configured key named by the state": {err: fmt.Errorf("x: %w: %w", statefile.ErrDecrypt, stateencryption.ErrNoMatchingKey),
			want: backendsv1alpha1.DecryptionFailedReason},
		"the wrong passphrase": {err: fmt.Errorf("x: %w: %w", statefile.ErrDecrypt, stateencryption.ErrDecryptionFailed),
			want: backendsv1alpha1.DecryptionFailedReason},
		"key parameters out of bounds": {err: fmt.Errorf("x: %w: %w", statefile.ErrDecrypt, stateencryption.ErrInvalidParameters),
			want: backendsv1alpha1.DecryptionFailedReason},
		"too large to decrypt": {err: fmt.Errorf("x: %w", statefile.ErrEncryptedTooLarge), want: backendsv1alpha1.StateUnreadableReason},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := contentFailure(tc.err)
			if got.Reason != tc.want || got.Status != metav1.ConditionFalse {
				t.Errorf("contentFailure(%v) = %+v, want %s, False", tc.err, got, tc.want)
			}
		})
	}
}

func TestUnencryptedState(t *testing.T) {
	enc := &backendsv1alpha1.StateEncryption{PassphraseSecretRef: backendsv1alpha1.SecretKeyRef{Name: "pass"}}
	migrating := &backendsv1alpha1.StateEncryption{PassphraseSecretRef: enc.PassphraseSecretRef,
		Fallback: &backendsv1alpha1.EncryptionFallback{Unencrypted: true}}
	plain := &backendsv1alpha1.StateSummary{Present: true, Serial: 3}
	encrypted := &backendsv1alpha1.StateSummary{Present: true, Serial: 3, Encrypted: true}
	cases := map[string]struct {
		enc   *backendsv1alpha1.StateEncryption
		state *backendsv1alpha1.StateSummary
		want  bool
	}{
		"a plain state OpenTofu will refuse": {enc: enc, state: plain, want: true},
		"an encrypted state":                 {enc: enc, state: encrypted},
		"no state yet":                       {enc: enc, state: &backendsv1alpha1.StateSummary{}},
		"migrating from a plain state":       {enc: migrating, state: plain},
		"no encryption":                      {state: plain},
	}
	for name, tt := range cases {
		t.Run(name, func(t *testing.T) {
			obs, ok := unencryptedState(tt.enc, tt.state)
			if ok != tt.want {
				t.Fatalf("unencryptedState() = %+v, %t; want %t", obs, ok, tt.want)
			}
			if ok && (obs.Reason != backendsv1alpha1.StateNotEncryptedReason || obs.Status != metav1.ConditionFalse) {
				t.Errorf("unencryptedState() = %+v, want False, StateNotEncrypted", obs)
			}
		})
	}
}

// TestApplyHTTPProbeOfAPlainStateOpenTofuRefuses applies the same probe
// twice: StateReachable says StateNotEncrypted, and does not move between
// probes that learn the same.
func TestApplyHTTPProbeOfAPlainStateOpenTofuRefuses(t *testing.T) {
	backend := builders.MakeHttpBackend("b", "ns", "").Generation(1).Encryption("pass").Obj()
	res := httpProbeResult{fetched: true, summary: &stateclient.StateSummary{Present: true, SizeBytes: 10,
		Summary: statefile.Summary{Serial: 4, Lineage: "l"}}}
	applyHTTPProbe(newOperatorMetrics(clock.RealClock{}), backend, res, "", time.Now())
	cond := meta.FindStatusCondition(backend.Status.Conditions, backendsv1alpha1.StateReachableCondition)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != backendsv1alpha1.StateNotEncryptedReason {
		t.Fatalf("StateReachable = %+v, want False, StateNotEncrypted", cond)
	}
	since := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cond.LastTransitionTime = since
	applyHTTPProbe(newOperatorMetrics(clock.RealClock{}), backend, res, "", time.Now())
	cond = meta.FindStatusCondition(backend.Status.Conditions, backendsv1alpha1.StateReachableCondition)
	if !cond.LastTransitionTime.Equal(&since) {
		t.Errorf("StateReachable moved from %s to %s on a probe that learned the same", since, cond.LastTransitionTime)
	}
}
