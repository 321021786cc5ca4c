package controllers

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// StateClient is what the HttpBackend controller uses of a state client.
type StateClient interface {
	Fetch(ctx context.Context) (*stateclient.Payload, error)
	FetchSummary(ctx context.Context) (*stateclient.StateSummary, error)
	Lock(ctx context.Context, info stateclient.LockInfo) (string, error)
	Unlock(ctx context.Context, id string) error
	ForceUnlock(ctx context.Context, id string) error
}

// StateClientFactory builds a state client from a backend's settings.
type StateClientFactory func(cfg stateclient.Config, log logr.Logger) (StateClient, error)

// CosClientFactory builds a COS client from a backend's settings. Tests
// inject one that points at a local COS protocol server.
type CosClientFactory func(cfg cos.Config) (*cos.Client, error)

// options are the settings shared by the reconcilers, set with Option.
type options struct {
	clock                   clock.PassiveClock
	stateClients            StateClientFactory
	cosClients              CosClientFactory
	maxConcurrentReconciles int
	cosDefaultRegion        string
}

// Option configures a reconciler.
type Option func(*options)

// WithClock sets the clock the reconcilers read.
func WithClock(c clock.PassiveClock) Option { return func(o *options) { o.clock = c } }

// WithStateClientFactory replaces how state clients are built.
func WithStateClientFactory(f StateClientFactory) Option {
	return func(o *options) { o.stateClients = f }
}

// WithCosClientFactory replaces how COS clients are built.
func WithCosClientFactory(f CosClientFactory) Option {
	return func(o *options) { o.cosClients = f }
}

// WithMaxConcurrentReconciles sets how many objects of a kind are
// reconciled at once.
func WithMaxConcurrentReconciles(n int) Option {
	return func(o *options) { o.maxConcurrentReconciles = n }
}

// WithCosDefaultRegion sets the region of CosBackends that set none.
func WithCosDefaultRegion(region string) Option {
	return func(o *options) { o.cosDefaultRegion = region }
}

func newOptions(opts []Option) options {
	o := options{
		clock: clock.RealClock{},
		stateClients: func(cfg stateclient.Config, log logr.Logger) (StateClient, error) {
			return stateclient.New(cfg, stateclient.WithLogger(log))
		},
		cosClients: func(cfg cos.Config) (*cos.Client, error) {
			return cos.New(cfg)
		},
		maxConcurrentReconciles: 1,
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
