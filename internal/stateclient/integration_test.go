package stateclient

import (
	"bytes"
	"crypto/md5" // protocol checksum
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/statefile"
	"github.com/infrastate/backend-operator/internal/stateserver"
)

// referenceServer serves the reference state server over real TCP.
func referenceServer(t *testing.T, store stateserver.Store, opts ...stateserver.Option) (*stateserver.Server, string) {
	t.Helper()
	srv := stateserver.New(store, opts...)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts.URL
}

// referenceConfig addresses state name on the reference server, with the
// lock on the state path (LOCK/UNLOCK) or on /lock (POST/DELETE).
func referenceConfig(base, name string, lockPath bool) Config {
	cfg := fastConfig(base)
	cfg.Address = base + "/state/" + name
	cfg.LockAddress, cfg.UnlockAddress = cfg.Address, cfg.Address
	if lockPath {
		cfg.LockAddress, cfg.UnlockAddress = cfg.Address+"/lock", cfg.Address+"/lock"
		cfg.LockMethod, cfg.UnlockMethod = http.MethodPost, http.MethodDelete
	}
	return cfg
}

// TestReferenceLifecycle runs lock, update with the lock ID, fetch, unlock
// and purge against the reference server, for both stores and both lock
// routes.
func TestReferenceLifecycle(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		dir      bool
		lockPath bool
	}{
		"memory, LOCK":       {},
		"memory, /lock path": {lockPath: true},
		"dir, LOCK":          {dir: true},
		"dir, /lock path":    {dir: true, lockPath: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var store stateserver.Store = stateserver.NewMemoryStore()
			if tc.dir {
				d, err := stateserver.NewDirStore(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				store = d
			}
			_, base := referenceServer(t, store, stateserver.WithBasicAuth("tf", "s3cret"))
			cfg := referenceConfig(base, "prod", tc.lockPath)
			cfg.Username, cfg.Password = "tf", "s3cret"
			c, other := mustNew(t, cfg), mustNew(t, cfg)
			ctx := ctxT(t)

			if data, err := fetchAll(ctx, c); data != nil || err != nil {
				t.Fatalf("StreamState() of no state = %q, %v", data, err)
			}
			if s, err := c.FetchSummary(ctx, nil); err != nil || s.Present {
				t.Fatalf("FetchSummary() of no state = %+v, %v", s, err)
			}
			info := NewLockInfo("OperationTypeApply", "operator@test")
			id, err := c.Lock(ctx, info)
			if err != nil || id != info.ID {
				t.Fatalf("Lock() = %q, %v", id, err)
			}
			if err := c.Update(ctx, []byte(smallState)); err != nil {
				t.Fatalf("Update() with the lock ID: %v", err)
			}
			// Another client without the ID is refused with the holder.
			err = other.Update(ctx, []byte(`{"version":4}`))
			checkHolder(t, err, id)
			if _, err := other.Lock(ctx, NewLockInfo("OperationTypeApply", "other")); err == nil {
				t.Fatal("a second Lock succeeded")
			}

			data, err := fetchAll(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(smallState, string(data)); diff != "" {
				t.Errorf("StreamState() read (-want +got):\n%s", diff)
			}
			s, err := other.FetchSummary(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := &StateSummary{Present: true, SizeBytes: int64(len(smallState)), Summary: statefile.Summary{
				Serial: 3, Lineage: "lin", TerraformVersion: "1.5.7",
				OutputCount: 2,
			}}
			if diff := cmp.Diff(want, s); diff != "" {
				t.Errorf("FetchSummary() mismatch (-want +got):\n%s", diff)
			}

			if err := c.Unlock(ctx, id); err != nil {
				t.Fatalf("Unlock(): %v", err)
			}
			// Unlocking again: the server has no lock and says 409.
			var le *LockError
			if err := c.Unlock(ctx, id); !errors.As(err, &le) || le.StatusCode != http.StatusConflict {
				t.Errorf("second Unlock() = %v, want a 409 *LockError", err)
			}
			if err := other.Update(ctx, []byte(smallState)); err != nil {
				t.Errorf("Update() after the unlock: %v", err)
			}
			if err := c.Purge(ctx); err != nil {
				t.Fatal(err)
			}
			if data, err := fetchAll(ctx, c); data != nil || err != nil {
				t.Errorf("StreamState() after Purge = %q, %v", data, err)
			}

			bad := cfg
			bad.Password = "wrong"
			if _, err := fetchAll(ctx, mustNew(t, bad)); !errors.Is(err, ErrForbidden) {
				t.Errorf("StreamState() with a wrong password = %v, want ErrForbidden", err)
			}
		})
	}
}

// TestReferenceForceUnlock breaks another client's lock by ID.
func TestReferenceForceUnlock(t *testing.T) {
	t.Parallel()
	_, base := referenceServer(t, stateserver.NewMemoryStore())
	cfg := referenceConfig(base, "stack", false)
	holder, admin := mustNew(t, cfg), mustNew(t, cfg)
	ctx := ctxT(t)
	id, err := holder.Lock(ctx, NewLockInfo("OperationTypeApply", "ci@runner"))
	if err != nil {
		t.Fatal(err)
	}
	// A wrong ID is refused with the holder named.
	err = admin.ForceUnlock(ctx, "not-the-holder")
	checkHolder(t, err, id)
	// Unlock by a client that does not hold the lock sends {"ID": id}.
	if err := admin.Unlock(ctx, id); err != nil {
		t.Fatalf("Unlock() by ID from another client: %v", err)
	}
	if _, err := admin.Lock(ctx, NewLockInfo("OperationTypeApply", "admin")); err != nil {
		t.Fatalf("Lock() after the force unlock: %v", err)
	}
	adminID := admin.heldLockID()
	// The old holder's Update carries its stale ID: refused, admin holds it.
	checkHolder(t, holder.Update(ctx, []byte(smallState)), adminID)
	if err := admin.ForceUnlock(ctx, adminID); err != nil {
		t.Fatal(err)
	}
	if admin.heldLockID() != "" {
		t.Error("ForceUnlock of the client's own lock left it held")
	}
	// Unlocked again: the stale ID is accepted, as the protocol requires.
	if err := holder.Update(ctx, []byte(smallState)); err != nil {
		t.Errorf("Update() with a stale ID while unlocked: %v", err)
	}
}

// TestReferenceConcurrentLockers races N clients for one lock: exactly one
// wins, every other gets a *LockError naming the winner.
func TestReferenceConcurrentLockers(t *testing.T) {
	t.Parallel()
	const n = 16
	_, base := referenceServer(t, stateserver.NewMemoryStore())
	cfg := referenceConfig(base, "contended", false)
	ctx := ctxT(t)
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		ids   = make([]string, n)
		errs  = make([]error, n)
	)
	for i := range n {
		c := mustNew(t, cfg)
		wg.Go(func() {
			<-start
			ids[i], errs[i] = c.Lock(ctx, NewLockInfo("OperationTypeApply", "racer"))
		})
	}
	close(start)
	wg.Wait()
	var winner string
	for i := range n {
		if errs[i] == nil {
			if winner != "" {
				t.Fatalf("two winners: %s and %s", winner, ids[i])
			}
			winner = ids[i]
		}
	}
	if winner == "" {
		t.Fatalf("no winner: %v", errs)
	}
	for i := range n {
		if errs[i] == nil {
			continue
		}
		var le *LockError
		if !errors.As(errs[i], &le) || le.StatusCode != http.StatusLocked || le.Info == nil || le.Info.ID != winner {
			t.Errorf("loser %d: %v, want a 423 *LockError naming %s", i, errs[i], winner)
		}
	}
}

// TestReferenceFaults uses the server's fault injection to check retries
// against the reference implementation.
func TestReferenceFaults(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		fault    stateserver.Fault
		wantErr  string
		requests int
		minTime  time.Duration
		waitMax  time.Duration // RetryWaitMax; 0: fastConfig's
	}{
		"two 503 then ok":  {fault: stateserver.Fault{Method: http.MethodGet, Status: 503, Times: 2}, requests: 3},
		"always 502":       {fault: stateserver.Fault{Method: http.MethodGet, Status: 502}, wantErr: "giving up after 3 attempt(s): last answer 502 Bad Gateway", requests: 3},
		"429 Retry-After":  {fault: stateserver.Fault{Method: http.MethodGet, Status: 429, Header: http.Header{"Retry-After": {"1"}}, Times: 1}, requests: 2, minTime: time.Second, waitMax: 5 * time.Second},
		"dropped once":     {fault: stateserver.Fault{Method: http.MethodGet, Drop: true, Times: 1}, requests: 2},
		"501 not retried":  {fault: stateserver.Fault{Method: http.MethodGet, Status: 501}, wantErr: "(501 Not Implemented)", requests: 1},
		"slow but in time": {fault: stateserver.Fault{Method: http.MethodGet, Delay: 50 * time.Millisecond, Times: 1}, requests: 1, minTime: 50 * time.Millisecond},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, base := referenceServer(t, stateserver.NewMemoryStore())
			cfg := referenceConfig(base, "s", false)
			if tc.waitMax != 0 {
				cfg.RetryWaitMax = tc.waitMax // Retry-After is honoured up to RetryWaitMax
			}
			c := mustNew(t, cfg)
			ctx := ctxT(t)
			if err := c.Update(ctx, []byte(smallState)); err != nil {
				t.Fatal(err)
			}
			srv.InjectFault(tc.fault)
			start := time.Now()
			data, err := fetchAll(ctx, c)
			checkErr(t, err, tc.wantErr, nil)
			if tc.wantErr == "" && string(data) != smallState {
				t.Errorf("StreamState() read %q", data)
			}
			if elapsed := time.Since(start); elapsed < tc.minTime {
				t.Errorf("took %v, want at least %v", elapsed, tc.minTime)
			}
			got := srv.Requests(http.MethodGet, "/state/s")
			// A dropped keep-alive GET may be resent once by net/http itself.
			resent := tc.fault.Drop && got == tc.requests+1
			if got != tc.requests && !resent {
				t.Errorf("server saw %d GETs, want %d", got, tc.requests)
			}
		})
	}
}

// TestUpdateFromReference writes under a lock another client took, as a
// restore does, against the reference server.
func TestUpdateFromReference(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ dir bool }{"memory": {}, "dir": {dir: true}}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var store stateserver.Store = stateserver.NewMemoryStore()
			if tc.dir {
				d, err := stateserver.NewDirStore(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				store = d
			}
			_, base := referenceServer(t, store)
			cfg := referenceConfig(base, "prod", false)
			locker, writer := mustNew(t, cfg), mustNew(t, cfg)
			ctx := ctxT(t)
			id, err := locker.Lock(ctx, NewLockInfo("OperationTypeApply", "operator@test"))
			if err != nil {
				t.Fatal(err)
			}
			data := benchState(2 << 20)
			f, sum := stateFile(t, data)

			// Without the ID the server refuses the write and names the holder.
			err = writer.UpdateFrom(ctx, "", f, int64(len(data)), sum)
			checkHolder(t, err, id)
			var le *LockError
			if errors.As(err, &le) && le.StatusCode != http.StatusLocked {
				t.Errorf("StatusCode = %d, want 423", le.StatusCode)
			}

			if err := writer.UpdateFrom(ctx, id, f, int64(len(data)), sum); err != nil {
				t.Fatalf("UpdateFrom() with the holder's ID: %v", err)
			}
			got, err := fetchAll(ctx, writer)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Errorf("the server holds %d bytes with MD5 %x, want %d bytes with MD5 %x", len(got), md5.Sum(got), len(data), sum)
			}

			// The lock holder itself needs no ID: it sends its own.
			small, smallSum := stateFile(t, []byte(smallState))
			if err := locker.UpdateFrom(ctx, "", small, int64(len(smallState)), smallSum); err != nil {
				t.Fatalf("UpdateFrom() by the holder: %v", err)
			}
			if got, err := fetchAll(ctx, writer); err != nil || string(got) != smallState {
				t.Errorf("the server holds %q (%v), want the holder's write", got, err)
			}
			if err := locker.Unlock(ctx, id); err != nil {
				t.Fatal(err)
			}
		})
	}
}
