package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/infrastate/backend-operator/internal/conformance"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/stateserver"
)

// lockTraffic serves a reference state server over loopback TCP and
// records the lock requests it is sent: "LOCK <ID>" and "UNLOCK <ID>"
// ("UNLOCK" alone for an empty body), and the UNLOCK bodies ("" for an
// empty one).
type lockTraffic struct {
	server *stateserver.Server
	store  stateserver.Store
	// learnedBehaviour is what learn learned last.
	learnedBehaviour *conformance.Behaviour
	url              string
	mu               sync.Mutex
	requests         []string
	unlocks          []string
}

func newLockTraffic(t *testing.T, opts ...stateserver.Option) *lockTraffic {
	t.Helper()
	store := stateserver.NewMemoryStore()
	lt := &lockTraffic{server: stateserver.New(store, opts...), store: store}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == stateserver.MethodLock || r.Method == stateserver.MethodUnlock {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var info struct{ ID string }
			_ = json.Unmarshal(body, &info)
			lt.mu.Lock()
			if info.ID != "" {
				lt.requests = append(lt.requests, r.Method+" "+info.ID)
			} else {
				lt.requests = append(lt.requests, r.Method)
			}
			if r.Method == stateserver.MethodUnlock {
				lt.unlocks = append(lt.unlocks, string(body))
			}
			lt.mu.Unlock()
		}
		lt.server.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	lt.url = ts.URL + "/state/app"
	return lt
}

// take returns the lock requests and UNLOCK bodies recorded so far, and
// forgets them.
func (lt *lockTraffic) take() (requests, unlocks []string) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	requests, unlocks = lt.requests, lt.unlocks
	lt.requests, lt.unlocks = nil, nil
	return requests, unlocks
}

// client returns a new state client with locking, as a new process (or
// the next operation) builds it.
func (lt *lockTraffic) client(t *testing.T) stateClient {
	t.Helper()
	cfg := stateclient.DefaultConfig(lt.url)
	cfg.LockAddress, cfg.UnlockAddress, cfg.RetryMax = lt.url, lt.url, 0
	sc, err := stateclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// hold takes the lock as another client would, with ID id, and forgets
// the traffic.
func (lt *lockTraffic) hold(ctx context.Context, t *testing.T, id, who string) *stateclient.LockInfo {
	t.Helper()
	info := stateclient.LockInfo{ID: id, Operation: "OperationTypeApply", Who: who, Version: "1.5.7", Created: slockNow}
	if _, err := lt.client(t).Lock(ctx, info); err != nil {
		t.Fatalf("taking lock %s: %v", id, err)
	}
	lt.take()
	return &info
}

// holderID returns the ID of the lock the server holds, "" when none,
// read from the server's store: no request, whatever the server answers.
func (lt *lockTraffic) holderID(_ context.Context, t *testing.T) string {
	t.Helper()
	rec, err := lt.store.Load("app")
	if err != nil {
		t.Fatalf("reading the lock: %v", err)
	}
	if rec.State != nil {
		_ = rec.State.Close()
	}
	if rec.Lock == nil {
		return ""
	}
	var info struct{ ID string }
	if err := json.Unmarshal(rec.Lock, &info); err != nil {
		t.Fatalf("reading the lock: %v", err)
	}
	return info.ID
}

// learn runs the check that learns what the server does with locks, as
// the backend's probe does for the object uid, on a state no one has
// locked, and forgets the traffic.
func (lt *lockTraffic) learn(ctx context.Context, t *testing.T, uid types.UID) *conformance.Behaviour {
	t.Helper()
	defer lt.take()
	b, err := learnServer(ctx, lt.client(t), lockCheckRun(uid))
	if err != nil {
		t.Fatalf("learning the server: %v", err)
	}
	lt.learnedBehaviour = b
	return b
}

// lockCheckRun is the lock check of the object uid, as a probe runs it.
func lockCheckRun(uid types.UID) httpProbeRun {
	return httpProbeRun{clock: clock.RealClock{}, checkLock: true, lockID: lockCheckID(uid), who: "backend-operator lock check of HttpBackend ns/app",
		info: "a test's lock check", created: slockNow.Add(-time.Hour)}
}

// serverModes are the lock behaviours of the state servers people run (see
// docs/servers.md), as reference server options.
var serverModes = map[string][]stateserver.Option{
	"reference (holder in 423, checks IDs)": nil,
	"holder in 409":                         {stateserver.WithConflictAnswer(stateserver.ConflictHolder409)},
	"text 409, checks IDs":                  {stateserver.WithConflictAnswer(stateserver.ConflictText409)},
	"text 423, ignores UNLOCK bodies":       {stateserver.WithConflictAnswer(stateserver.ConflictText423), stateserver.WithUnlockCheck(stateserver.UnlockIgnoresBody)},
	"text 409, exact body only":             {stateserver.WithConflictAnswer(stateserver.ConflictText409), stateserver.WithUnlockCheck(stateserver.UnlockExactBody)},
	"holder in 423, exact body only":        {stateserver.WithUnlockCheck(stateserver.UnlockExactBody)},
	"holder in 423, ignores UNLOCK bodies":  {stateserver.WithUnlockCheck(stateserver.UnlockIgnoresBody)},
	"text 423, reentrant LOCK":              {stateserver.WithConflictAnswer(stateserver.ConflictText423), stateserver.WithReentrantLock()},
	"text 423, no force unlock":             {stateserver.WithConflictAnswer(stateserver.ConflictText423), stateserver.WithUnlockBodies(stateserver.AcceptNoForceUnlock)},
}

// learnedReference is what the operator learns of the reference server in
// its default mode, Terraform's own test server's behaviour: learned once,
// over loopback TCP, by the check the probes run.
var learnedReference = sync.OnceValues(func() (conformance.Behaviour, error) {
	srv := httptest.NewServer(stateserver.New(stateserver.NewMemoryStore()))
	defer srv.Close()
	url := srv.URL + "/state/reference"
	cfg := stateclient.DefaultConfig(url)
	cfg.LockAddress, cfg.UnlockAddress, cfg.RetryMax = url, url, 0
	sc, err := stateclient.New(cfg)
	if err != nil {
		return conformance.Behaviour{}, err
	}
	defer sc.CloseIdleConnections()
	b, err := learnServer(context.Background(), sc, lockCheckRun("reference"))
	if err != nil {
		return conformance.Behaviour{}, err
	}
	return *b, nil
})

// referenceServer is what the operator learns of Terraform's own test
// server (see learnedReference).
func referenceServer(t *testing.T) conformance.Behaviour {
	t.Helper()
	b, err := learnedReference()
	if err != nil {
		t.Fatalf("learning the reference server: %v", err)
	}
	return b
}
