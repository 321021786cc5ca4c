//go:build linux

package controllers

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/infrastate/backend-operator/internal/stateencryption"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// The attack BenchmarkKeyDerivationUnderAttack measures: each namespace
// has attackBackends backends on a server that answers every read with
// a state written anew at the bounds, and each backend probes every
// attackProbeSpacing.
const (
	attackBackends     = 4
	attackProbeSpacing = 15 * time.Second
)

// BenchmarkKeyDerivationUnderAttack measures the CPU the manager spends on
// key derivation when namespaces' servers answer every read with a state
// written anew at the bounds (a fresh 1 KiB salt at 2,000,000 iterations
// of SHA-512, for the primary and the fallback passphrase, which no cache
// can serve), without a budget and with the default budgets. Each
// iteration simulates probing on a fake clock, through the reads'
// stateDecrypter, decryption slots and budget, and reads the process's
// CPU time (getrusage): cpu-s/min is the CPU per simulated minute (for a
// budget, its last minute, once the burst of a fresh share is spent),
// cores the same as a fraction of a core, cpu-s/read the CPU of one
// probe's read, and refused/read the share of reads refused. It runs for
// minutes:
//
//	go test ./controllers/ -run '^$' -bench KeyDerivationUnderAttack -benchtime 1x
func BenchmarkKeyDerivationUnderAttack(b *testing.B) {
	cases := []struct {
		namespaces int
		budgeted   bool
		// simulated is how long one iteration probes, on the fake clock:
		// without a budget every round costs the same, so one suffices.
		simulated time.Duration
	}{
		{namespaces: 1, simulated: attackProbeSpacing},
		{namespaces: 1, budgeted: true, simulated: 2 * time.Minute},
		{namespaces: 3, simulated: attackProbeSpacing},
		{namespaces: 3, budgeted: true, simulated: 2 * time.Minute},
	}
	keys := kdfEncryption().keys()
	for _, tc := range cases {
		name := fmt.Sprintf("namespaces=%d/budget=%t", tc.namespaces, tc.budgeted)
		b.Run(name, func(b *testing.B) {
			var cpu, measured time.Duration
			refused, reads, measuredReads := 0, 0, 0
			for b.Loop() {
				clk := clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0))
				slots := newDecryptions(DefaultMaxConcurrentDecryptions)
				dec := stateDecrypter{encryption: kdfEncryption(), decryptions: slots}
				if tc.budgeted {
					dec.derivations = newTenantBudgets(DefaultBudgets(), clk).keyDerivation
				}
				rounds := int(tc.simulated / attackProbeSpacing)
				lastMinute := max(rounds-int(time.Minute/attackProbeSpacing), 0)
				var start time.Duration
				for round := range rounds {
					if round == lastMinute {
						start = processCPU(b)
					}
					for ns := range tc.namespaces {
						dec.namespace = fmt.Sprintf("tenant-%d", ns)
						for range attackBackends {
							doc, err := encryptedState(keys, -1, stateencryption.MaxIterations, stateencryption.MaxSaltLength, 1, "attack")
							if err != nil {
								b.Fatal(err)
							}
							_, err = statefile.ReadSummary(bytes.NewReader(doc), dec.forRead(b.Context()))
							if derivationRefusal(err) != nil {
								refused++
							}
							reads++
							if round >= lastMinute {
								measuredReads++
							}
						}
					}
					clk.SetTime(clk.Now().Add(attackProbeSpacing))
				}
				cpu += processCPU(b) - start
				measured += time.Duration(rounds-lastMinute) * attackProbeSpacing
			}
			perMinute := cpu.Seconds() / measured.Minutes()
			b.ReportMetric(perMinute, "cpu-s/min")
			b.ReportMetric(perMinute/60, "cores")
			b.ReportMetric(cpu.Seconds()/float64(measuredReads), "cpu-s/read")
			b.ReportMetric(float64(refused)/float64(reads), "refused/read")
		})
	}
}

// processCPU is the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
