package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/stateserver"
)

const gitlabToken = "glpat-conformance"

// target is a reference server over real TCP and a client for one state.
type target struct {
	srv  *stateserver.Server
	cfg  stateclient.Config
	path string // the state's URL path, for request counts
}

// newTarget serves the reference server with opts and addresses state
// name, the GitLab way when gitlab is true.
func newTarget(t *testing.T, gitlab bool, opts ...stateserver.Option) target {
	t.Helper()
	if gitlab {
		opts = append(opts, stateserver.WithGitLab(stateserver.GitLabUser{Name: "ci-bot", Token: gitlabToken}))
	}
	srv := stateserver.New(stateserver.NewMemoryStore(), append(opts, stateserver.WithRequestCounting())...)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	path := "/state/scratch"
	cfg := stateclient.Config{RetryMax: 2, RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond}
	if gitlab {
		path = "/api/v4/projects/1/terraform/state/scratch"
		cfg.LockMethod, cfg.UnlockMethod = http.MethodPost, http.MethodDelete
		cfg.Username, cfg.Password = "ci-bot", gitlabToken
	}
	cfg.Address = ts.URL + path
	cfg.LockAddress, cfg.UnlockAddress = cfg.Address, cfg.Address
	if gitlab {
		cfg.LockAddress, cfg.UnlockAddress = cfg.Address+"/lock", cfg.Address+"/lock"
	}
	return target{srv: srv, cfg: cfg, path: path}
}

func (tg target) client(t *testing.T) *stateclient.Client {
	t.Helper()
	c, err := stateclient.New(tg.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ids returns an Options.NewID giving prefix-1, prefix-2, ...
func ids(prefix string) func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("%s-%d", prefix, n) }
}

// mustBeFree fails the test unless another holder can take the lock of
// tg's state and release it: nothing the check took is left.
func mustBeFree(t *testing.T, tg target) {
	t.Helper()
	c := tg.client(t)
	id, err := c.Lock(t.Context(), stateclient.NewLockInfo("OperationTypeApply", "after@check"))
	if err != nil {
		t.Fatalf("LOCK after the check: %v; the check left a lock", err)
	}
	if err := c.Unlock(t.Context(), id); err != nil {
		t.Fatalf("UNLOCK after the check: %v", err)
	}
}

// TestCheckModes runs Check against the reference server in each of its
// modes (see kinds), over real TCP, and compares what it learned with what
// the mode does; every run must leave the state unlocked.
func TestCheckModes(t *testing.T) {
	for name, k := range kinds() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tg := newTarget(t, k.gitlab, k.opts...)
			res, err := Check(t.Context(), tg.client(t), Options{Who: "check@test"})
			if err != nil {
				t.Fatalf("Check: %v\nsteps: %+v", err, res.Steps)
			}
			if !res.Complete || len(res.LeftLocks) != 0 || res.Locked != nil {
				t.Errorf("Complete %v, LeftLocks %v, Locked %v; want a complete check that left nothing", res.Complete, res.LeftLocks, res.Locked)
			}
			if diff := cmp.Diff(k.behaviour, res.Behaviour); diff != "" {
				t.Errorf("Behaviour (-want +got):\n%s", diff)
			}
			mustBeFree(t, tg)
		})
	}
}

// TestCheckLeavesOthersLocks checks that the check touches no lock it did
// not take: on a state locked by someone else it sends one LOCK and stops,
// on every kind of server.
func TestCheckLeavesOthersLocks(t *testing.T) {
	cases := map[string]struct {
		gitlab bool
		opts   []stateserver.Option
		want   *Conflict
	}{
		"holder in conflicts": {want: &Conflict{Status: 423}},
		"plain text, UNLOCK ignores its body": {
			opts: []stateserver.Option{stateserver.WithConflictAnswer(stateserver.ConflictText409), stateserver.WithUnlockCheck(stateserver.UnlockIgnoresBody)},
			want: &Conflict{Status: 409},
		},
		"GitLab": {gitlab: true, want: &Conflict{Status: 409}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tg := newTarget(t, tc.gitlab, tc.opts...)
			other := tg.client(t)
			info := stateclient.NewLockInfo("OperationTypeApply", "runner@pod")
			if _, err := other.Lock(t.Context(), info); err != nil {
				t.Fatal(err)
			}
			tg.srv.ResetRequests()
			res, err := Check(t.Context(), tg.client(t), Options{})
			if !errors.Is(err, ErrStateLocked) {
				t.Fatalf("Check = %v, want ErrStateLocked", err)
			}
			if res.Locked != nil && res.Locked.Holder != nil {
				if res.Locked.Holder.ID != info.ID {
					t.Errorf("Locked names %q, want the holder %q", res.Locked.Holder.ID, info.ID)
				}
				res.Locked.Holder = nil
			}
			if diff := cmp.Diff(tc.want, res.Locked); diff != "" {
				t.Errorf("Locked (-want +got):\n%s", diff)
			}
			unlockMethod, lockPath := stateserver.MethodUnlock, tg.path
			if tc.gitlab {
				unlockMethod, lockPath = http.MethodDelete, tg.path+"/lock"
			}
			if n := tg.srv.Requests(unlockMethod, lockPath); n != 0 {
				t.Errorf("the check sent %d UNLOCKs, want none", n)
			}
			if err := other.Unlock(t.Context(), info.ID); err != nil {
				t.Errorf("the holder's UNLOCK after the check: %v; its lock is gone", err)
			}
		})
	}
}

// interrupting is a Client whose ID-only release, once it succeeded, is
// followed by a LOCK of another holder: as if a runner took the lock
// between two of the check's steps.
type interrupting struct {
	*stateclient.Client
	other  *stateclient.Client
	holder stateclient.LockInfo
	taken  bool
}

func (i *interrupting) ForceUnlock(ctx context.Context, id string) error {
	err := i.Client.ForceUnlock(ctx, id)
	if err == nil && !i.taken {
		i.taken = true
		if _, err := i.other.Lock(ctx, i.holder); err != nil {
			return fmt.Errorf("the other holder's LOCK: %w", err)
		}
	}
	return err
}

// TestCheckInterrupted checks that a check that loses the lock to another
// holder between two steps stops, and leaves that holder's lock alone,
// even on a server where any UNLOCK releases any lock.
func TestCheckInterrupted(t *testing.T) {
	for name, opts := range map[string][]stateserver.Option{
		"UNLOCK checks the ID":    nil,
		"UNLOCK ignores its body": {stateserver.WithUnlockCheck(stateserver.UnlockIgnoresBody), stateserver.WithConflictAnswer(stateserver.ConflictText423)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tg := newTarget(t, false, opts...)
			c := &interrupting{Client: tg.client(t), other: tg.client(t), holder: stateclient.NewLockInfo("OperationTypeApply", "runner@pod")}
			res, err := Check(t.Context(), c, Options{})
			if !errors.Is(err, ErrInterrupted) || res.Complete || len(res.LeftLocks) != 0 {
				t.Fatalf("Check = %v, Complete %v, LeftLocks %v; want ErrInterrupted, incomplete, nothing left", err, res.Complete, res.LeftLocks)
			}
			if err := c.other.Unlock(t.Context(), c.holder.ID); err != nil {
				t.Errorf("the other holder's UNLOCK: %v; the check released its lock", err)
			}
		})
	}
}

// TestCheckLockLeft checks that a check whose lock the server will not
// release says so, naming the lock, which is indeed still held.
func TestCheckLockLeft(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, false)
	tg.srv.InjectFault(stateserver.Fault{Method: stateserver.MethodUnlock, Status: http.StatusServiceUnavailable})
	res, err := Check(t.Context(), tg.client(t), Options{NewID: ids("check"), ReleaseTimeout: time.Second})
	if !errors.Is(err, ErrLockLeft) {
		t.Fatalf("Check = %v, want ErrLockLeft", err)
	}
	if diff := cmp.Diff([]string{"check-1"}, res.LeftLocks); diff != "" {
		t.Errorf("LeftLocks (-want +got):\n%s", diff)
	}
	_, err = tg.client(t).Lock(t.Context(), stateclient.NewLockInfo("OperationTypeApply", "after@check"))
	var lockErr *stateclient.LockError
	if !errors.As(err, &lockErr) || lockErr.Info == nil || lockErr.Info.ID != "check-1" {
		t.Errorf("LOCK after the check = %v, want a conflict naming check-1", err)
	}
}

// TestCheckLockingDisabled checks that the check takes no lock it could
// not release.
func TestCheckLockingDisabled(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, false)
	tg.cfg.UnlockAddress = ""
	if _, err := Check(t.Context(), tg.client(t), Options{}); !errors.Is(err, ErrLockingDisabled) {
		t.Errorf("Check = %v, want ErrLockingDisabled", err)
	}
	if n := tg.srv.Requests(stateserver.MethodLock, tg.path); n != 0 {
		t.Errorf("%d LOCKs sent, want none", n)
	}
}
