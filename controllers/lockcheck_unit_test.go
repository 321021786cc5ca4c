package controllers

import (
	"context"
	"io"
	"testing"

	"github.com/go-logr/logr"

	"github.com/infrastate/backend-operator/internal/stateclient"
)

// fakeStateClient is a StateClient whose calls are functions of the test.
type fakeStateClient struct {
	lock   func(ctx context.Context, info stateclient.LockInfo) (string, error)
	unlock func(ctx context.Context, id string) error
}

func (f *fakeStateClient) FetchSummary(context.Context) (*stateclient.StateSummary, error) {
	return &stateclient.StateSummary{}, nil
}

func (f *fakeStateClient) StreamState(context.Context, func(io.Reader) error) (bool, int64, error) {
	return false, 0, nil
}

func (f *fakeStateClient) Lock(ctx context.Context, info stateclient.LockInfo) (string, error) {
	return f.lock(ctx, info)
}

func (f *fakeStateClient) Unlock(ctx context.Context, id string) error { return f.unlock(ctx, id) }

func (f *fakeStateClient) ForceUnlock(context.Context, string) error { return nil }

// TestLockCheckReleasesItsLockWhenCancelled checks that the lock check
// releases the lock it took even when its probe is cancelled in between
// (a spec change or a deletion supersedes the probe): a lock left behind
// would block every terraform apply.
func TestLockCheckReleasesItsLockWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var released bool
	sc := &fakeStateClient{
		lock: func(ctx context.Context, info stateclient.LockInfo) (string, error) {
			cancel() // the probe is superseded while the lock is held
			return info.ID, nil
		},
		unlock: func(ctx context.Context, id string) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			released = true
			return nil
		},
	}
	res := runHTTPProbe(ctx, sc, httpProbePlan{checkLock: true}, logr.Discard())
	if !released || res.lock.unlockErr != nil {
		t.Fatalf("the lock check's own lock was not released (unlock error %v)", res.lock.unlockErr)
	}
}
