package controllers

import (
	"fmt"
	"time"

	"k8s.io/utils/clock"

	"github.com/infrastate/backend-operator/controllers/internal/budget"
	"github.com/infrastate/backend-operator/controllers/internal/owned"
)

// Budgets are the shares of what the manager spends that each namespace
// may use, and their totals: the sum over every tenant stays within the
// manager's limits by construction (see docs/security.md).
type Budgets struct {
	// ReadMemoryPerNamespace and ReadMemoryTotal bound the bytes held for
	// state reads: reads in flight (their most) and results waiting to be
	// published.
	ReadMemoryPerNamespace, ReadMemoryTotal int64
	// APIStoragePerNamespace and APIStorageTotal bound the bytes of the
	// objects the operator writes to the API server: rendered Secrets and
	// ConfigMaps, published outputs.
	APIStoragePerNamespace, APIStorageTotal int64
	// KeyDerivationPerNamespace and KeyDerivationTotal bound the CPU time
	// spent deriving keys of encrypted states, per KeyDerivationWindow.
	KeyDerivationPerNamespace, KeyDerivationTotal time.Duration
}

// KeyDerivationWindow is the window of the key derivation budget: a
// namespace's share is CPU time per minute.
const KeyDerivationWindow = time.Minute

// The flags of the budgets; cmd/manager registers them, and refusals
// name them.
const (
	ReadMemoryPerNamespaceFlag    = "read-memory-per-namespace"
	ReadMemoryTotalFlag           = "read-memory-total"
	APIStoragePerNamespaceFlag    = "api-storage-per-namespace"
	APIStorageTotalFlag           = "api-storage-total"
	KeyDerivationPerNamespaceFlag = "key-derivation-cpu-per-namespace"
	KeyDerivationTotalFlag        = "key-derivation-cpu-total"
)

// DefaultBudgets are the budgets of a manager that sets none: they fit
// the chart's GOMEMLIMIT (256MiB) and CPU limit (500m), and an API server
// whose etcd holds the default 2 GiB.
func DefaultBudgets() Budgets {
	return Budgets{
		ReadMemoryPerNamespace:    16 << 20,
		ReadMemoryTotal:           48 << 20,
		APIStoragePerNamespace:    64 << 20,
		APIStorageTotal:           1 << 30,
		KeyDerivationPerNamespace: 6 * time.Second,
		KeyDerivationTotal:        15 * time.Second,
	}
}

// minReadMemoryShare is the least read memory share: one RemoteState read
// at its most (see remoteReadReservation) must fit.
const minReadMemoryShare = remoteReadReservation

// Validate checks that each share fits its total and that the read
// memory share holds one read at its most.
func (b Budgets) Validate() error {
	switch {
	case b.ReadMemoryPerNamespace < minReadMemoryShare:
		return fmt.Errorf("--%s must be at least %d MiB, one state read at its most, got %d bytes",
			ReadMemoryPerNamespaceFlag, minReadMemoryShare>>20, b.ReadMemoryPerNamespace)
	case b.ReadMemoryTotal < b.ReadMemoryPerNamespace:
		return fmt.Errorf("--%s must be at least --%s", ReadMemoryTotalFlag, ReadMemoryPerNamespaceFlag)
	case b.APIStoragePerNamespace < 1<<20:
		return fmt.Errorf("--%s must be at least 1 MiB, one Secret at its largest, got %d bytes", APIStoragePerNamespaceFlag, b.APIStoragePerNamespace)
	case b.APIStorageTotal < b.APIStoragePerNamespace:
		return fmt.Errorf("--%s must be at least --%s", APIStorageTotalFlag, APIStoragePerNamespaceFlag)
	case b.KeyDerivationPerNamespace <= 0:
		return fmt.Errorf("--%s must be positive, got %s", KeyDerivationPerNamespaceFlag, b.KeyDerivationPerNamespace)
	case b.KeyDerivationTotal < b.KeyDerivationPerNamespace:
		return fmt.Errorf("--%s must be at least --%s", KeyDerivationTotalFlag, KeyDerivationPerNamespaceFlag)
	}
	return nil
}

// WithBudgets sets the budgets; the default is DefaultBudgets.
func WithBudgets(b Budgets) Option { return func(o *options) { o.budgets = b } }

// tenantBudgets are the budgets the reconcilers draw from, shared across
// kinds by SetupAll.
type tenantBudgets struct {
	readMemory    *budget.Shares
	apiStorage    *budget.Shares
	keyDerivation *budget.Shares
	// stored counts the bytes of the objects the operator writes, per
	// object, and draws them from apiStorage.
	stored *owned.Ledger
}

// newTenantBudgets makes the shares of b, reading time from clk.
func newTenantBudgets(b Budgets, clk clock.PassiveClock) *tenantBudgets {
	apiStorage := budget.New(budget.Config{Name: "API storage", Unit: budget.Bytes,
		PerNamespace: b.APIStoragePerNamespace, PerNamespaceFlag: APIStoragePerNamespaceFlag,
		Total: b.APIStorageTotal, TotalFlag: APIStorageTotalFlag}, clk)
	return &tenantBudgets{
		readMemory: budget.New(budget.Config{Name: "read memory", Unit: budget.Bytes,
			PerNamespace: b.ReadMemoryPerNamespace, PerNamespaceFlag: ReadMemoryPerNamespaceFlag,
			Total: b.ReadMemoryTotal, TotalFlag: ReadMemoryTotalFlag}, clk),
		apiStorage: apiStorage,
		stored:     owned.NewLedger(apiStorage),
		keyDerivation: budget.New(budget.Config{Name: "key derivation CPU", Unit: budget.Nanoseconds,
			PerNamespace: int64(b.KeyDerivationPerNamespace), PerNamespaceFlag: KeyDerivationPerNamespaceFlag,
			Total: int64(b.KeyDerivationTotal), TotalFlag: KeyDerivationTotalFlag, Window: KeyDerivationWindow}, clk),
	}
}

// collector serves the budgets' use as metrics.
func (t *tenantBudgets) collector() *budget.Collector {
	return budget.NewCollector(t.readMemory, t.apiStorage, t.keyDerivation)
}

// withTenantBudgets shares t between reconcilers.
func withTenantBudgets(t *tenantBudgets) Option { return func(o *options) { o.tenantBudgets = t } }

// remoteReadReservation is what a RemoteState read may hold at its most
// while it runs: the selected outputs of both classes up to twice the
// largest object each (see outputs.Read), and the decoder's buffers. A
// finished read holds what it kept (see remoteRead.heldBytes).
const remoteReadReservation = 6 << 20
