package controllers

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/utils/clock"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/statefile"
	"github.com/infrastate/backend-operator/internal/stateserver"
)

// fakeStateClient is a stateClient whose calls are functions of the test.
type fakeStateClient struct {
	lock   func(ctx context.Context, info stateclient.LockInfo) (string, error)
	unlock func(ctx context.Context, id string) error
}

func (f *fakeStateClient) FetchSummary(context.Context, *statefile.Decryption) (*stateclient.StateSummary, error) {
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
		lock: func(_ context.Context, info stateclient.LockInfo) (string, error) {
			cancel() // the probe is superseded while the lock is held
			return info.ID, nil
		},
		unlock: func(ctx context.Context, _ string) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			released = true
			return nil
		},
	}
	res := runHTTPProbe(ctx, sc, httpProbeRun{clock: clock.RealClock{}, checkLock: true}, logr.Discard())
	if !released || res.lock.ownErr != nil {
		t.Fatalf("the lock check's own lock was not released (unlock error %v)", res.lock.ownErr)
	}
}

func (f *fakeStateClient) ForceUnlockEmptyBody(context.Context) error { return nil }
func (f *fakeStateClient) CloseIdleConnections()                      {}
func (f *fakeStateClient) Resume(stateclient.LockInfo) error          { return nil }

// TestForceUnlockOnEachServer releases a named lock on servers that accept
// different UNLOCK bodies, over real TCP: the ID body first, the empty
// body only when the ID body was refused, and a refusal of both reported
// with each status code and the lock left held.
func TestForceUnlockOnEachServer(t *testing.T) {
	const holder = "3f0a3c51-6f9b-2c8e-1d2a-9b7c6e5d4f3a"
	idBody := `{"ID":"` + holder + `","Operation":"","Info":"","Who":"","Version":"","Created":"0001-01-01T00:00:00Z","Path":""}`
	cases := map[string]struct {
		accept      stateserver.UnlockBodies
		wantUnlocks []string
		wantErr     error
		wantHeld    string
	}{
		"any body":        {accept: stateserver.AcceptAnyUnlock, wantUnlocks: []string{idBody}},
		"empty body only": {accept: stateserver.AcceptEmptyUnlock, wantUnlocks: []string{idBody, ""}},
		"ID body only":    {accept: stateserver.AcceptIDUnlock, wantUnlocks: []string{idBody}},
		"neither": {accept: stateserver.AcceptNoForceUnlock, wantUnlocks: []string{idBody, ""},
			wantErr: &forceUnlockRefusedError{idBody: 400, emptyBody: 500}, wantHeld: holder},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newLockTraffic(t, tc.accept)
			srv.hold(t.Context(), t, holder, "alice@laptop")
			plan := httpProbeRun{clock: clock.RealClock{}, checkLock: true, forceUnlock: holder, lockID: lockCheckID("uid-1"), who: "backend-operator test"}
			got := runHTTPProbe(t.Context(), srv.client(t), plan, logr.Discard()).lock
			_, unlocks := srv.take()
			if diff := cmp.Diff(tc.wantUnlocks, unlocks); diff != "" {
				t.Errorf("UNLOCK bodies (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantErr, got.releaseErr, cmp.AllowUnexported(forceUnlockRefusedError{})); diff != "" {
				t.Errorf("release error (-want +got):\n%s", diff)
			}
			if got.released != (tc.wantErr == nil) || got.holder == nil || got.holder.ID != holder {
				t.Errorf("reading = %+v, want the holder %s, released %v", got, holder, tc.wantErr == nil)
			}
			if h := srv.holderID(t.Context(), t); h != tc.wantHeld {
				t.Errorf("lock held after the probe: %q, want %q", h, tc.wantHeld)
			}
			v := lockStatus(got, lockTerms{forceUnlockID: holder})
			wantReason := map[bool]string{true: "ForceUnlocked", false: "ForceUnlockRefused"}[tc.wantErr == nil]
			if v.obs.Reason != wantReason {
				t.Errorf("Locked reason %s (%s), want %s", v.obs.Reason, v.obs.Message, wantReason)
			}
		})
	}
}

// TestForceUnlockNeverSendsTheEmptyBodyForAnotherHolder checks that a lock
// held by another ID than forceUnlock names is left alone on every server:
// no UNLOCK at all, least of all the empty body, which would release it.
func TestForceUnlockNeverSendsTheEmptyBodyForAnotherHolder(t *testing.T) {
	for _, accept := range []stateserver.UnlockBodies{stateserver.AcceptAnyUnlock, stateserver.AcceptEmptyUnlock} {
		srv := newLockTraffic(t, accept)
		srv.hold(t.Context(), t, "the-holder", "alice@laptop")
		plan := httpProbeRun{clock: clock.RealClock{}, checkLock: true, forceUnlock: "another-id", lockID: lockCheckID("uid-1"), who: "backend-operator test"}
		got := runHTTPProbe(t.Context(), srv.client(t), plan, logr.Discard()).lock
		if _, unlocks := srv.take(); len(unlocks) != 0 {
			t.Errorf("sent UNLOCK %q for a lock forceUnlock does not name", unlocks)
		}
		if v := lockStatus(got, lockTerms{forceUnlockID: "another-id"}); v.obs.Reason != "ForceUnlockSkipped" || srv.holderID(t.Context(), t) != "the-holder" {
			t.Errorf("Locked %s (%s), lock held by %q; want ForceUnlockSkipped and the-holder", v.obs.Reason, v.obs.Message, srv.holderID(t.Context(), t))
		}
	}
}

// TestLockCheckReleasesItsOwnLeftoverLock checks that a lock the lock
// check could not release is reported as the operator's own, and released
// by the next check, including one taken before a restart: the ID is
// derived from the backend's UID.
func TestLockCheckReleasesItsOwnLeftoverLock(t *testing.T) {
	srv := newLockTraffic(t, stateserver.AcceptEmptyUnlock)
	plan := httpProbeRun{clock: clock.RealClock{}, checkLock: true, lockID: lockCheckID("uid-1"), who: "backend-operator lock check of HttpBackend ns/app"}
	if plan.lockID != lockCheckID("uid-1") || plan.lockID == lockCheckID("uid-2") {
		t.Fatal("lockCheckID is not a function of the UID alone")
	}

	// The release of the check's lock fails every time.
	srv.server.InjectFault(stateserver.Fault{Method: stateserver.MethodUnlock, Status: http.StatusBadGateway})
	got := runHTTPProbe(t.Context(), srv.client(t), plan, logr.Discard()).lock
	if got.ownErr == nil || !got.held || got.holder == nil || got.holder.ID != plan.lockID || got.holder.Who != plan.who {
		t.Fatalf("reading = %+v, want the check's own lock, held", got)
	}
	if _, unlocks := srv.take(); len(unlocks) != lockReleaseAttempts {
		t.Errorf("%d UNLOCK attempts, want %d", len(unlocks), lockReleaseAttempts)
	}
	v := lockStatus(got, lockTerms{})
	if v.obs.Status != metav1.ConditionTrue || v.obs.Reason != "LockCheckNotReleased" || !strings.Contains(v.obs.Message, plan.lockID) {
		t.Errorf("Locked = %+v, want True LockCheckNotReleased naming the lock", v.obs)
	}

	// The next check, by a new client as after a restart, releases it.
	srv.server.ClearFaults()
	got = runHTTPProbe(t.Context(), srv.client(t), plan, logr.Discard()).lock
	if diff := cmp.Diff(lockReading{}, got, cmp.AllowUnexported(lockReading{}, holderSighting{})); diff != "" {
		t.Errorf("reading after the leftover was released (-want +got):\n%s", diff)
	}
	if h := srv.holderID(t.Context(), t); h != "" {
		t.Errorf("lock held by %q after the check, want free", h)
	}
}

// TestUnreadableHolderIsNeverQuoted checks that a lock holder's body that
// does not parse as LockInfo reaches no condition message: a server that
// echoes request headers into it would publish them.
func TestUnreadableHolderIsNeverQuoted(t *testing.T) {
	const echoed = "Basic c2VjcmV0LWVjaG9lZA=="
	for name, body := range map[string]string{
		"not JSON":                  "<html>" + echoed + "</html>",
		"a field the decoder sees":  `{"ID":"x","Created":"` + echoed + `"}`,
		"a value of the wrong type": `{"ID":["` + echoed + `"]}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusLocked)
				_, _ = io.WriteString(w, body)
			}))
			t.Cleanup(srv.Close)
			cfg := stateclient.DefaultConfig(srv.URL)
			cfg.LockAddress, cfg.UnlockAddress, cfg.RetryMax = srv.URL, srv.URL, 0
			sc, err := stateclient.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			plan := httpProbeRun{clock: clock.RealClock{}, checkLock: true, forceUnlock: "x", lockID: lockCheckID("uid-1"), who: "backend-operator test"}
			got := runHTTPProbe(t.Context(), sc, plan, logr.Discard()).lock
			v := lockStatus(got, lockTerms{forceUnlockID: plan.forceUnlock})
			if v.obs.Status != metav1.ConditionTrue || strings.Contains(v.obs.Message, "c2VjcmV0") || strings.Contains(v.obs.Message, "html") {
				t.Errorf("Locked = %+v, want True without the holder's body", v.obs)
			}
		})
	}
}
