package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/stateserver"
)

// lockTraffic serves a reference state server over loopback TCP and
// records the lock requests it is sent: "LOCK <ID>" and "UNLOCK <ID>"
// ("UNLOCK" alone for an empty body), and the UNLOCK bodies ("" for an
// empty one).
type lockTraffic struct {
	server   *stateserver.Server
	url      string
	mu       sync.Mutex
	requests []string
	unlocks  []string
}

func newLockTraffic(t *testing.T, accept stateserver.UnlockBodies) *lockTraffic {
	t.Helper()
	lt := &lockTraffic{server: stateserver.New(stateserver.NewMemoryStore(), stateserver.WithUnlockBodies(accept))}
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
// and forgets the traffic. It peeks by taking the lock, and releases it
// with the client that took it: the exact body every server accepts.
func (lt *lockTraffic) holderID(ctx context.Context, t *testing.T) string {
	t.Helper()
	defer lt.take()
	c := lt.client(t)
	_, err := c.Lock(ctx, stateclient.LockInfo{ID: "peek", Created: slockNow})
	var lockErr *stateclient.LockError
	switch {
	case errors.As(err, &lockErr) && lockErr.Info != nil:
		return lockErr.Info.ID
	case err != nil:
		t.Fatalf("reading the holder: %v", err)
	}
	if err := c.Unlock(ctx, "peek"); err != nil {
		t.Fatalf("releasing the peek: %v", err)
	}
	return ""
}
