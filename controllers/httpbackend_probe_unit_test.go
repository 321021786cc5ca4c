package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/utils/clock"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"

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

func (f *fakeStateClient) UpdateFrom(context.Context, string, io.ReadSeeker, int64, [16]byte) error {
	return errors.New("a probe writes no state")
}

func (f *fakeStateClient) Lock(ctx context.Context, info stateclient.LockInfo) (string, error) {
	return f.lock(ctx, info)
}

func (f *fakeStateClient) UnlockWithBody(ctx context.Context, body []byte) error {
	var info stateclient.LockInfo
	_ = json.Unmarshal(body, &info)
	return f.unlock(ctx, info.ID)
}

func (f *fakeStateClient) ForceUnlock(context.Context, string) error  { return nil }
func (f *fakeStateClient) ForceUnlockEmptyBody(context.Context) error { return nil }
func (f *fakeStateClient) FetchStatus(context.Context) (int, error)   { return http.StatusOK, nil }
func (f *fakeStateClient) LocksConfigured() bool                      { return true }
func (f *fakeStateClient) CloseIdleConnections()                      {}

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
	res := runHTTPProbe(ctx, sc, httpProbeRun{clock: clock.RealClock{}, checkLock: true, server: new(referenceServer(t))}, logr.Discard())
	if !released || res.lock.ownErr != nil {
		t.Fatalf("the lock check's own lock was not released (unlock error %v)", res.lock.ownErr)
	}
}

// TestLockCheckBeforeTheServerIsKnown checks a probe whose check of the
// server cannot run because another holds the lock (a stuck lock, the
// very case forceUnlock is for), on every server mode: the lock is still
// read, the holder shown where the conflict names it, and the named lock
// released with the holder's LockInfo as the conflict carried it, which
// releases it and no other on every server that names holders; where
// none is named, nothing is sent. Once the lock is free, the next probe
// learns the server.
func TestLockCheckBeforeTheServerIsKnown(t *testing.T) {
	for _, mode := range sortedModes() {
		t.Run(mode, func(t *testing.T) {
			srv := newLockTraffic(t, serverModes[mode]...)
			alice := srv.hold(t.Context(), t, "alice-1", "alice@laptop")
			plan := lockCheckRun("uid-1")
			plan.learnServer = true
			res := runHTTPProbe(t.Context(), srv.client(t), plan, logr.Discard())
			named := holderReported(mode)
			if res.learned != nil || !res.lockChecked || !res.lock.held || res.lock.err != nil || (res.lock.holder != nil) != named {
				t.Fatalf("probe of a locked state = learned %v, lock %+v; want not learned, and the lock read held", res.learned, res.lock)
			}
			if named && (res.lock.holder.ID != "alice-1" || res.lock.holder.Who != "alice@laptop" || res.lock.holder.Operation != "OperationTypeApply") {
				t.Errorf("holder %+v, want alice's lock", res.lock.holder)
			}
			if _, unlocks := srv.take(); len(unlocks) != 0 {
				t.Errorf("UNLOCKs %q sent without forceUnlock", unlocks)
			}

			plan.forceUnlock = "alice-1"
			res = runHTTPProbe(t.Context(), srv.client(t), plan, logr.Discard())
			unlocks := namedUnlocks(srv, plan.lockID)
			if named {
				exact, err := json.Marshal(alice)
				if err != nil {
					t.Fatal(err)
				}
				if res.lock.releaseErr != nil || !res.lock.released || srv.holderID(t.Context(), t) != "" || !cmp.Equal(unlocks, []string{string(exact)}) {
					t.Errorf("forceUnlock = %+v, UNLOCKs %q, held %q; want alice's lock released with its LockInfo", res.lock, unlocks, srv.holderID(t.Context(), t))
				}
			} else {
				if _, ok := errors.AsType[*forceUnlockUnsupportedError](res.lock.releaseErr); !ok || len(unlocks) != 0 || srv.holderID(t.Context(), t) != "alice-1" {
					t.Errorf("forceUnlock = %+v, UNLOCKs %q; want nothing sent, the lock left, and why", res.lock, unlocks)
				}
				releaseAsAdmin(t.Context(), t, srv)
			}

			plan.forceUnlock = ""
			res = runHTTPProbe(t.Context(), srv.client(t), plan, logr.Discard())
			if res.learned == nil || !res.lockChecked || res.lock.held || res.lock.skip != nil {
				t.Errorf("probe of a free state = learned %v, lock %+v; want learned, and the lock read free", res.learned, res.lock)
			}
			if h := srv.holderID(t.Context(), t); h != "" {
				t.Errorf("the server holds %q after the probe, want nothing", h)
			}
		})
	}
}

// TestWithoutEchoes checks which fields of a conflict's LockInfo a server
// not checked yet may only have echoed from the check's own LOCK.
func TestWithoutEchoes(t *testing.T) {
	sent := lockCheckRun("uid-1").lockCheckInfo()
	created := metav1.NewTime(slockNow)
	cases := map[string]struct {
		holder, want *backendsv1alpha1.LockInfo
	}{
		"no holder": {},
		"a holder of its own": {
			holder: &backendsv1alpha1.LockInfo{ID: "alice-1", Operation: "OperationTypeApply", Who: "alice@laptop", Version: "1.5.7", Created: &created, Path: "p"},
			want:   &backendsv1alpha1.LockInfo{ID: "alice-1", Operation: "OperationTypeApply", Who: "alice@laptop", Version: "1.5.7", Created: &created, Path: "p"},
		},
		"GitLab: the holder's ID, the server's Who and Created, the request's other fields": {
			holder: &backendsv1alpha1.LockInfo{ID: "alice-1", Operation: sent.Operation, Info: sent.Info, Who: "alice", Created: &created},
			want:   &backendsv1alpha1.LockInfo{ID: "alice-1", Who: "alice", Created: &created},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, withoutEchoes(tc.holder, sent)); diff != "" {
				t.Errorf("withoutEchoes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestForceUnlockOnEachServer releases a named lock on every server mode,
// over real TCP, as the server's behaviour allows: the ID-only body where
// the server checks IDs, the holder's LockInfo as the conflict carried it
// where only the exact body releases, a body that may release any lock
// only right after a conflict named the lock; and nothing at all where the
// operator cannot release only the named lock, with a reason saying what
// terraform and tofu force-unlock would do.
func TestForceUnlockOnEachServer(t *testing.T) {
	const holder = "3f0a3c51-6f9b-2c8e-1d2a-9b7c6e5d4f3a"
	holderInfo := stateclient.LockInfo{ID: holder, Operation: "OperationTypeApply", Who: "alice@laptop", Version: "1.5.7", Created: slockNow}
	exact, err := json.Marshal(holderInfo)
	if err != nil {
		t.Fatal(err)
	}
	idBody := `{"ID":"` + holder + `","Operation":"","Info":"","Who":"","Version":"","Created":"0001-01-01T00:00:00Z","Path":""}`
	type want struct {
		unlocks []string
		reason  string
		held    bool
		// mentions is a phrase of the Locked message.
		mentions string
	}
	released := func(body string) want { return want{unlocks: []string{body}, reason: "ForceUnlocked"} }
	unsupported := func(mentions string) want {
		return want{reason: "ForceUnlockUnsupported", held: true, mentions: mentions}
	}
	cases := map[string]struct {
		opts []stateserver.Option
		want want
	}{
		"reference (holder in 423, checks IDs)": {want: released(idBody)},
		"holder in 409":                         {opts: serverModes["holder in 409"], want: released(idBody)},
		"text 409, checks IDs":                  {opts: serverModes["text 409, checks IDs"], want: released(idBody)},
		"text 423, reentrant LOCK":              {opts: serverModes["text 423, reentrant LOCK"], want: released(idBody)},
		"holder in 423, exact body only":        {opts: serverModes["holder in 423, exact body only"], want: released(string(exact))},
		"holder in 423, ignores UNLOCK bodies":  {opts: serverModes["holder in 423, ignores UNLOCK bodies"], want: released(string(exact))},
		"text 423, ignores UNLOCK bodies": {opts: serverModes["text 423, ignores UNLOCK bodies"],
			want: unsupported("releases any lock on any UNLOCK and its conflicts name no holder")},
		"text 409, exact body only": {opts: serverModes["text 409, exact body only"],
			want: unsupported("which the operator cannot send for a lock it did not take")},
		"text 423, no force unlock": {opts: serverModes["text 423, no force unlock"],
			want: unsupported("which the operator cannot send for a lock it did not take")},
		"exact or empty body": {opts: []stateserver.Option{stateserver.WithUnlockBodies(stateserver.AcceptEmptyUnlock)}, want: released(string(exact))},
		"ID body only":        {opts: []stateserver.Option{stateserver.WithUnlockBodies(stateserver.AcceptIDUnlock)}, want: released(idBody)},
		"exact body only, other bodies refused with 400 and 500": {opts: []stateserver.Option{stateserver.WithUnlockBodies(stateserver.AcceptNoForceUnlock)},
			want: released(string(exact))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newLockTraffic(t, tc.opts...)
			plan := lockCheckRun("uid-1")
			plan.server = srv.learn(t.Context(), t, "uid-1")
			plan.forceUnlock = holder
			if _, err := srv.client(t).Lock(t.Context(), holderInfo); err != nil {
				t.Fatal(err)
			}
			srv.take()
			got := runHTTPProbe(t.Context(), srv.client(t), plan, logr.Discard()).lock
			unlocks := namedUnlocks(srv, plan.lockID)
			if diff := cmp.Diff(tc.want.unlocks, unlocks); diff != "" {
				t.Errorf("UNLOCK bodies (-want +got):\n%s", diff)
			}
			if h := srv.holderID(t.Context(), t); (h == holder) != tc.want.held {
				t.Errorf("lock held after the probe: %q, want held %v", h, tc.want.held)
			}
			v := lockStatus(got, lockTerms{forceUnlockID: holder})
			if v.obs.Reason != tc.want.reason || !strings.Contains(v.obs.Message, tc.want.mentions) {
				t.Errorf("Locked %s (%s), want %s mentioning %q", v.obs.Reason, v.obs.Message, tc.want.reason, tc.want.mentions)
			}
			if tc.want.reason == "ForceUnlockUnsupported" && !strings.Contains(v.obs.Message, "terraform force-unlock") {
				t.Errorf("Locked message %q does not say what terraform force-unlock would do", v.obs.Message)
			}
		})
	}
}

// namedUnlocks are the UNLOCK bodies srv was sent but those naming the
// lock check's own lock checkID, which a check sends on a server that
// names no holder in case the lock held is its own leftover (the server
// checks the ID, so it releases nothing else); it forgets the traffic.
func namedUnlocks(srv *lockTraffic, checkID string) []string {
	_, unlocks := srv.take()
	var named []string
	for _, body := range unlocks {
		if !strings.Contains(body, `"ID":"`+checkID+`"`) {
			named = append(named, body)
		}
	}
	return named
}

// TestForceUnlockRefusedByTheServer checks that an UNLOCK the server
// refuses leaves the lock held, says so with the status code, and is
// tried again at the next probe.
func TestForceUnlockRefusedByTheServer(t *testing.T) {
	srv := newLockTraffic(t)
	plan := lockCheckRun("uid-1")
	plan.server = srv.learn(t.Context(), t, "uid-1")
	plan.forceUnlock = "alice-1"
	srv.hold(t.Context(), t, "alice-1", "alice@laptop")
	srv.server.InjectFault(stateserver.Fault{Method: stateserver.MethodUnlock, Status: http.StatusBadRequest})
	got := runHTTPProbe(t.Context(), srv.client(t), plan, logr.Discard()).lock
	v := lockStatus(got, lockTerms{forceUnlockID: plan.forceUnlock})
	if v.obs.Reason != "ForceUnlockRefused" || !strings.Contains(v.obs.Message, "HTTP 400") || !strings.Contains(v.obs.Message, "next probe") {
		t.Errorf("Locked %s (%s), want ForceUnlockRefused with HTTP 400, tried again", v.obs.Reason, v.obs.Message)
	}
	if h := srv.holderID(t.Context(), t); h != "alice-1" {
		t.Errorf("lock held by %q after the probe, want alice-1", h)
	}
}

// TestForceUnlockLeavesAnotherHolderAlone checks that a lock held by
// another ID than forceUnlock names is left alone on every server mode:
// where conflicts name the holder, no UNLOCK at all; where they do not, an
// UNLOCK naming the ID only on a server that checks it (which refuses it),
// and never a body that could release whatever lock is held.
func TestForceUnlockLeavesAnotherHolderAlone(t *testing.T) {
	for _, mode := range sortedModes() {
		t.Run(mode, func(t *testing.T) {
			srv := newLockTraffic(t, serverModes[mode]...)
			plan := lockCheckRun("uid-1")
			plan.server = srv.learn(t.Context(), t, "uid-1")
			plan.forceUnlock = "another-id"
			srv.hold(t.Context(), t, "the-holder", "alice@laptop")
			got := runHTTPProbe(t.Context(), srv.client(t), plan, logr.Discard()).lock
			unlocks := namedUnlocks(srv, plan.lockID)
			for _, body := range unlocks {
				if !strings.Contains(body, `"ID":"another-id"`) || !plan.server.UnlockChecksID || plan.server.UnlockIgnoresBody {
					t.Errorf("sent UNLOCK %q for a lock forceUnlock does not name", body)
				}
			}
			if holderReported(mode) && len(unlocks) != 0 {
				t.Errorf("sent UNLOCK %q although the conflict named another holder", unlocks)
			}
			if h := srv.holderID(t.Context(), t); h != "the-holder" {
				t.Errorf("lock held by %q after the probe, want the-holder", h)
			}
			v := lockStatus(got, lockTerms{forceUnlockID: plan.forceUnlock})
			if v.obs.Status != metav1.ConditionTrue || (v.obs.Reason != "ForceUnlockSkipped" && v.obs.Reason != "ForceUnlockUnsupported") {
				t.Errorf("Locked %s %s (%s), want True ForceUnlockSkipped or ForceUnlockUnsupported", v.obs.Status, v.obs.Reason, v.obs.Message)
			}
		})
	}
}

// TestLockCheckReleasesItsOwnLeftoverLock checks that a lock the lock
// check could not release is reported as the operator's own, and released
// by the next check, including one taken before a restart (by a new
// client): its LockInfo is a function of the object alone, so that a
// server that releases only the exact LockInfo takes it back.
func TestLockCheckReleasesItsOwnLeftoverLock(t *testing.T) {
	for name, opts := range map[string][]stateserver.Option{
		"exact or empty body":            {stateserver.WithUnlockBodies(stateserver.AcceptEmptyUnlock)},
		"holder in 423, exact body only": serverModes["holder in 423, exact body only"],
		"text 409, exact body only":      serverModes["text 409, exact body only"],
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each waits for the retries of a failing release
			srv := newLockTraffic(t, opts...)
			plan := lockCheckRun("uid-1")
			if plan.lockID != lockCheckID("uid-1") || plan.lockID == lockCheckID("uid-2") || plan.lockCheckInfo() != lockCheckRun("uid-1").lockCheckInfo() {
				t.Fatal("the lock check's LockInfo is not a function of the object alone")
			}
			plan.server = srv.learn(t.Context(), t, "uid-1")

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
			if diff := cmp.Diff(lockReading{}, got, cmp.AllowUnexported(lockReading{}, holderSighting{}, podEvidence{})); diff != "" {
				t.Errorf("reading after the leftover was released (-want +got):\n%s", diff)
			}
			if h := srv.holderID(t.Context(), t); h != "" {
				t.Errorf("lock held by %q after the check, want free", h)
			}
		})
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
			plan := httpProbeRun{clock: clock.RealClock{}, checkLock: true, forceUnlock: "x", lockID: lockCheckID("uid-1"), who: "backend-operator test",
				server: new(referenceServer(t))}
			got := runHTTPProbe(t.Context(), sc, plan, logr.Discard()).lock
			v := lockStatus(got, lockTerms{forceUnlockID: plan.forceUnlock})
			if v.obs.Status != metav1.ConditionTrue || strings.Contains(v.obs.Message, "c2VjcmV0") || strings.Contains(v.obs.Message, "html") {
				t.Errorf("Locked = %+v, want True without the holder's body", v.obs)
			}
		})
	}
}
