package controllers

import (
	"context"
	"io"

	"github.com/go-logr/logr"

	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// stateClient is what the HttpBackend kind uses of a state client.
type stateClient interface {
	FetchSummary(ctx context.Context, dec *statefile.Decryption) (*stateclient.StateSummary, error)
	StreamState(ctx context.Context, read func(io.Reader) error) (found bool, size int64, err error)
	Lock(ctx context.Context, info stateclient.LockInfo) (string, error)
	ForceUnlock(ctx context.Context, id string) error
	ForceUnlockEmptyBody(ctx context.Context) error
	// UnlockWithBody sends an UNLOCK with exactly body: a LockInfo as a
	// lock was taken with, for a server that releases only that.
	UnlockWithBody(ctx context.Context, body []byte) error
	// FetchStatus answers the status of a GET of the state (404 and a
	// GitLab's 204 for a state locked but never written differ).
	FetchStatus(ctx context.Context) (int, error)
	// UpdateFrom writes a whole state, streamed from body (rewound for
	// each attempt), under the lock lockID names.
	UpdateFrom(ctx context.Context, lockID string, body io.ReadSeeker, size int64, md5sum [16]byte) error
	// LocksConfigured reports whether lock and unlock addresses are set.
	LocksConfigured() bool
	// CloseIdleConnections closes the connections kept for a next
	// request; every probe and state read calls it when it is done.
	CloseIdleConnections()
}

// stateClientFactory builds a state client from a backend's settings.
type stateClientFactory func(cfg stateclient.Config, log logr.Logger) (stateClient, error)

// cosClientFactory builds a COS client from a backend's settings. The
// options' one connects through the address policy (to the
// WithCosServiceURL server when one is set).
type cosClientFactory func(cfg cos.Config) (*cos.Client, error)
