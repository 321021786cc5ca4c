package stateencryption

import (
	"fmt"
	"time"
)

// Meter admits, or refuses, the key derivations of a Keyring, and learns
// what each one cost: a state server chooses the salt and the iterations,
// so what a read costs is the server's to decide, and the Meter is how
// the Keyring's owner bounds it. Only derivations are metered: a key the
// KeyCache holds costs nothing and is never refused. A Meter must be safe
// for concurrent use.
type Meter interface {
	// Admit is asked before each derivation that the KeyCache cannot
	// spare: nil lets it run, an error refuses it, and the error of the
	// Keyring's Decrypt then wraps both ErrDerivationRefused and it. The
	// primary key and each fallback are derived, and so admitted, one at
	// a time, so a read runs at most one derivation past what Admit
	// would refuse.
	Admit() error
	// Spent is told what each derivation Admit let run cost, measured
	// (see measureCost): on Linux the CPU time of the thread that ran it,
	// elsewhere its wall time. A derivation that failed is told too.
	Spent(cost time.Duration)
}

// KeyringOption configures a Keyring.
type KeyringOption func(*Keyring)

// WithMeter meters the keyring's derivations with m; without it, every
// derivation runs.
func WithMeter(m Meter) KeyringOption {
	return func(k *Keyring) { k.meter = m }
}

// metered is derive admitted by k's meter and measured for it; derive
// itself when k has no meter. Its refusal wraps ErrDerivationRefused and
// the meter's error.
func (k *Keyring) metered() deriveFunc {
	if k.meter == nil {
		return k.derive
	}
	return func(passphrase []byte, p params) ([]byte, error) {
		if err := k.meter.Admit(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrDerivationRefused, err)
		}
		var (
			key []byte
			err error
		)
		k.meter.Spent(k.measure(func() { key, err = k.derive(passphrase, p) }))
		return key, err
	}
}
