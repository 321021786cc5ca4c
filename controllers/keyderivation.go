package controllers

import (
	"errors"
	"fmt"
	"time"

	"github.com/infrastate/backend-operator/controllers/internal/budget"
	"github.com/infrastate/backend-operator/internal/stateencryption"
)

// The key derivation CPU budget: a state server chooses the salt and the
// iterations of the states it serves, so a server that answers each read
// with a new salt at the iteration bound makes every probe derive its
// keys anew (about 1.15 CPU-seconds per passphrase at 2,000,000
// iterations of SHA-512), which the key cache cannot spare. Each
// namespace's derivations draw from its share of tenantBudgets'
// keyDerivation, and a derivation is refused once the share, or the
// total, is used; a cached key costs nothing and is never refused.

// derivationMeter meters the key derivations of the reads of namespace
// against its share of the key derivation CPU budget (see
// stateencryption.Meter). It refuses at once, never waits: a read
// derives while it holds one of the manager's decryption slots (see
// decryptions), which a wait would keep from the other namespaces.
type derivationMeter struct {
	shares    *budget.Shares
	namespace string
}

// derivationAsked is what Admit asks of the budget: a derivation is
// admitted while anything of the share (and the total) is left, and
// charged what it cost once it ran, measured rather than estimated. A
// read so runs at most one derivation past the share.
const derivationAsked = 1 // nanosecond

// Admit implements stateencryption.Meter: the *budget.ExceededError of a
// used share or total.
func (m derivationMeter) Admit() error {
	return m.shares.Fits(m.namespace, derivationAsked)
}

// Spent implements stateencryption.Meter: cost is charged to the
// namespace's share, and drains with the budget's window.
func (m derivationMeter) Spent(cost time.Duration) {
	m.shares.Charge(m.namespace, int64(cost))
}

// derivationRefusedError is a read stopped because the key derivation CPU
// budget refused to derive a key. It reads as the budget's refusal alone:
// it is no failed decryption (statefile.ErrDecrypt), since no passphrase
// was found wrong, and it never quotes one.
type derivationRefusedError struct {
	exceeded *budget.ExceededError
}

func (e *derivationRefusedError) Error() string {
	x := e.exceeded
	if x.Total {
		return fmt.Sprintf("all namespaces together have used %s of the manager's %s of %s per minute (--%s)",
			seconds(x.Used), seconds(x.Limit), x.Budget, x.Flag)
	}
	return fmt.Sprintf("namespace %s has used %s of its %s share of %s per minute (--%s)",
		x.Namespace, seconds(x.Used), seconds(x.Limit), x.Budget, x.Flag)
}

// Unwrap is the refusal's sentinel and the budget's error.
func (e *derivationRefusedError) Unwrap() []error {
	return []error{stateencryption.ErrDerivationRefused, e.exceeded}
}

// seconds shows an amount of the budget, in nanoseconds, in seconds.
func seconds(n int64) string {
	return fmt.Sprintf("%.1fs", time.Duration(n).Seconds())
}

// derivationRefusal returns err, when it is a read whose key derivation
// the budget refused, as a *derivationRefusedError; nil otherwise.
func derivationRefusal(err error) *derivationRefusedError {
	exceeded, ok := errors.AsType[*budget.ExceededError](err)
	if !ok || !errors.Is(err, stateencryption.ErrDerivationRefused) {
		return nil
	}
	return &derivationRefusedError{exceeded: exceeded}
}

// derivationNextStep is what the message of a refused derivation
// (BudgetExceeded) says after the error: that it clears by itself, what
// made the budget run out, and the flag that sets it.
func derivationNextStep(err error) string {
	flags := "its flags"
	if x, ok := errors.AsType[*budget.ExceededError](err); ok {
		flags = "--" + x.Flag
	}
	return fmt.Sprintf("No passphrase was found wrong: probes and reads resume as the minute's use drains, and a state whose key "+
		"was derived before is read at no cost meanwhile. Every state written anew has a new salt and costs one key derivation per "+
		"passphrase, up to %d PBKDF2 iterations each: check that the state server does not answer each read with a new salt, and "+
		"that the runners keep OpenTofu's default key parameters; the platform team sets the budget with %s",
		stateencryption.MaxIterations, flags)
}
