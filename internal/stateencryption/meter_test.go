package stateencryption

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// errOverBudget is what fakeMeter refuses with.
var errOverBudget = errors.New("over budget")

// fakeMeter admits its first allowance derivations and refuses the
// others, and records what it is asked and told.
type fakeMeter struct {
	allowance int
	mu        sync.Mutex
	asked     int
	spent     []time.Duration
}

// Admit implements Meter.
func (m *fakeMeter) Admit() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked++
	if m.asked > m.allowance {
		return errOverBudget
	}
	return nil
}

// Spent implements Meter.
func (m *fakeMeter) Spent(cost time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.spent = append(m.spent, cost)
}

// derivationCost is what the tests' keyrings measure for a derivation.
const derivationCost = 7 * time.Millisecond

func TestKeyringMeter(t *testing.T) {
	current := encrypt(t, plainState, passCurrent, fastParams())
	old := encrypt(t, plainState, passOld, fastParams())
	other := encrypt(t, plainState, passWrong, fastParams())
	keyCurrent := Key{Provider: providerCurrent, Passphrase: []byte(passCurrent)}
	keyOld := Key{Provider: providerOld, Passphrase: []byte(passOld)}
	// rotated has parameters for both keys; only the fallback opens it,
	// so that opening it takes two derivations.
	rotated := decryption{meta: map[string][]byte{MetaKey(providerCurrent): other.doc, MetaKey(providerOld): old.doc}, payload: old.payload}
	plain := decryption{meta: map[string][]byte{MetaKey(providerCurrent): current.doc}, payload: current.payload}
	// fresh is another state of the same key, with a new salt.
	rewritten := encrypt(t, plainState, passCurrent, fastParams())
	fresh := decryption{meta: map[string][]byte{MetaKey(providerCurrent): rewritten.doc}, payload: rewritten.payload}

	cases := map[string]struct {
		keys      []Key
		allowance int
		// reads are decrypted in order through one keyring and cache.
		reads []decryption
		// wantErrs is the sentinel each read's error must match, nil for
		// success.
		wantErrs []error
		// wantAsked and wantDerived are how many derivations the meter
		// was asked for and how many ran (and were charged).
		wantAsked, wantDerived int
	}{
		"a derivation is admitted, then charged": {
			keys: []Key{keyCurrent}, allowance: 1, reads: []decryption{plain},
			wantErrs: []error{nil}, wantAsked: 1, wantDerived: 1,
		},
		"a refused derivation does not run": {
			keys: []Key{keyCurrent}, allowance: 0, reads: []decryption{plain},
			wantErrs: []error{ErrDerivationRefused}, wantAsked: 1, wantDerived: 0,
		},
		"a cached key is neither asked for nor charged": {
			keys: []Key{keyCurrent}, allowance: 1, reads: []decryption{plain, plain, plain},
			wantErrs: []error{nil, nil, nil}, wantAsked: 1, wantDerived: 1,
		},
		"a cached key still opens its state once the meter refuses": {
			keys: []Key{keyCurrent}, allowance: 1, reads: []decryption{plain, fresh, plain},
			wantErrs: []error{nil, ErrDerivationRefused, nil}, wantAsked: 2, wantDerived: 1,
		},
		"the primary and the fallback are admitted one at a time": {
			keys: []Key{keyCurrent, keyOld}, allowance: 2, reads: []decryption{rotated},
			wantErrs: []error{nil}, wantAsked: 2, wantDerived: 2,
		},
		"the fallback is refused after the primary ran": {
			keys: []Key{keyCurrent, keyOld}, allowance: 1, reads: []decryption{rotated},
			wantErrs: []error{ErrDerivationRefused}, wantAsked: 2, wantDerived: 1,
		},
		"a refused primary leaves a cached fallback to open the state": {
			keys: []Key{keyCurrent, keyOld}, allowance: 2,
			// The first read caches both keys; the second, of the same
			// state with the primary's parameters renewed, needs a
			// derivation the meter refuses, and the cached fallback opens
			// it.
			reads: []decryption{rotated, {meta: map[string][]byte{MetaKey(providerCurrent): encrypt(t, plainState, passWrong, fastParams()).doc,
				MetaKey(providerOld): old.doc}, payload: old.payload}},
			wantErrs: []error{nil, nil}, wantAsked: 3, wantDerived: 2,
		},
		"a refusal is not a wrong passphrase": {
			keys: []Key{{Provider: providerCurrent, Passphrase: []byte(passWrong)}}, allowance: 0, reads: []decryption{plain},
			wantErrs: []error{ErrDerivationRefused}, wantAsked: 1, wantDerived: 0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			meter := &fakeMeter{allowance: tc.allowance}
			ring := NewKeyring(tc.keys, NewKeyCache(0), WithMeter(meter))
			var derived atomic.Int64
			ring.derive = func(passphrase []byte, p params) ([]byte, error) {
				derived.Add(1)
				return deriveKey(passphrase, p)
			}
			ring.measure = func(f func()) time.Duration {
				f()
				return derivationCost
			}
			for i, read := range tc.reads {
				got, err := ring.Decrypt(read.meta, read.payload)
				want := tc.wantErrs[i]
				switch {
				case want == nil && err != nil:
					t.Fatalf("read %d: %v", i, err)
				case want == nil && !bytes.Equal(got, plainState):
					t.Fatalf("read %d returned another state", i)
				case want != nil && !errors.Is(err, want):
					t.Fatalf("read %d: error %v, want one matching %v", i, err, want)
				}
				if errors.Is(err, ErrDerivationRefused) {
					if !errors.Is(err, errOverBudget) || errors.Is(err, ErrDecryptionFailed) {
						t.Errorf("read %d: refusal %v does not wrap the meter's error alone", i, err)
					}
					checkNoSecret(t, err, read.payload, nil)
				}
			}
			wantSpent := make([]time.Duration, tc.wantDerived)
			for i := range wantSpent {
				wantSpent[i] = derivationCost
			}
			if meter.asked != tc.wantAsked || derived.Load() != int64(tc.wantDerived) {
				t.Errorf("the meter was asked %d times and %d derivations ran, want %d and %d", meter.asked, derived.Load(), tc.wantAsked, tc.wantDerived)
			}
			if diff := cmp.Diff(wantSpent, meter.spent, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("charged (-want +got):\n%s", diff)
			}
		})
	}
}

// decryption is one Decrypt call's input.
type decryption struct {
	meta    map[string][]byte
	payload []byte
}

// TestMeasureCost checks that a real derivation's measured cost is what
// the meter is told, and that it is not nothing.
func TestMeasureCost(t *testing.T) {
	current := encrypt(t, plainState, passCurrent, fastParams())
	meter := &fakeMeter{allowance: 1}
	ring := NewKeyring([]Key{{Provider: providerCurrent, Passphrase: []byte(passCurrent)}}, nil, WithMeter(meter))
	if _, err := ring.Decrypt(map[string][]byte{MetaKey(providerCurrent): current.doc}, current.payload); err != nil {
		t.Fatalf("Decrypt: %v", err)
	}
	if len(meter.spent) != 1 || meter.spent[0] <= 0 {
		t.Errorf("charged %v, want one positive cost", meter.spent)
	}
}
