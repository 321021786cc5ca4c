package cos_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/cos/costest"
)

const defaultLockKey = "env/terraform.tfstate.tflock"

// newLockInfo is the LockInfo the tests acquire with.
func newLockInfo() cos.LockInfo {
	return cos.LockInfo{
		ID: "6f1c3a2e-8d4b-4c5a-9e7f-0a1b2c3d4e5f", Operation: "OperationTypeApply", Who: "backend-operator",
		Info: "StateLock team-a/freeze", Created: time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC),
	}
}

// ourLockJSON is the lock object AcquireLock writes for newLockInfo in
// the default workspace: Terraform's LockInfo JSON, Path the lock key.
const ourLockJSON = `{"ID":"6f1c3a2e-8d4b-4c5a-9e7f-0a1b2c3d4e5f","Operation":"OperationTypeApply","Info":"StateLock team-a/freeze","Who":"backend-operator","Version":"","Created":"2026-03-04T05:06:07.000000008Z","Path":"env/terraform.tfstate.tflock"}`

// requestsTo counts the requests srv received with method for key.
func requestsTo(srv *costest.Server, method, key string) int {
	n := 0
	for _, r := range srv.RequestLog() {
		if r.Method == method && r.Path == "/"+key {
			n++
		}
	}
	return n
}

// heldBy returns the holder of a *LockHeldError and whether err is one.
func heldBy(err error) (*cos.LockInfo, bool) {
	held, ok := errors.AsType[*cos.LockHeldError](err)
	if !ok {
		return nil, false
	}
	return held.Holder, true
}

func TestAcquireLock(t *testing.T) {
	theirs := &cos.LockInfo{
		ID: md5hex([]byte(lockJSON)), Operation: "OperationTypeApply", Who: "user@host", Version: "1.5.7",
		Created: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC), Path: "env/staging/terraform.tfstate.tflock",
	}
	cases := map[string]struct {
		workspace  string
		info       func(*cos.LockInfo)
		setup      func(srv *costest.Server)
		lockKey    string // "" for defaultLockKey
		wantErrs   []error
		wantHeld   bool          // a *LockHeldError
		wantHolder *cos.LockInfo // its Holder
		wantObject string        // the lock object afterwards, "" for none
		wantPUTs   int
	}{
		"free": {
			wantObject: ourLockJSON, wantPUTs: 1,
		},
		"free, a named workspace": {
			workspace: "staging", lockKey: "env/staging/terraform.tfstate.tflock",
			wantObject: strings.Replace(ourLockJSON, "env/terraform", "env/staging/terraform", 1), wantPUTs: 1,
		},
		"free, the caller's Path replaced": {
			info:       func(i *cos.LockInfo) { i.Path = "somewhere/else" },
			wantObject: ourLockJSON, wantPUTs: 1,
		},
		"free, a state but no lock": {
			setup:      func(srv *costest.Server) { srv.PutState(bucket, "env/terraform.tfstate", []byte(state)) },
			wantObject: ourLockJSON, wantPUTs: 1,
		},
		"held": {
			workspace: "staging", lockKey: "env/staging/terraform.tfstate.tflock",
			setup: func(srv *costest.Server) {
				srv.PutState(bucket, "env/staging/terraform.tfstate.tflock", []byte(lockJSON))
			},
			wantHeld: true, wantHolder: theirs, wantObject: lockJSON,
		},
		"held by this very lock": {
			setup:      func(srv *costest.Server) { srv.PutState(bucket, defaultLockKey, []byte(ourLockJSON)) },
			wantObject: ourLockJSON,
		},
		"held by a lock of the same holder, another ID": {
			info:     func(i *cos.LockInfo) { i.ID = "another-uuid" },
			setup:    func(srv *costest.Server) { srv.PutState(bucket, defaultLockKey, []byte(ourLockJSON)) },
			wantHeld: true, wantObject: ourLockJSON,
			wantHolder: &cos.LockInfo{
				ID: md5hex([]byte(ourLockJSON)), Operation: "OperationTypeApply", Info: "StateLock team-a/freeze",
				Who: "backend-operator", Created: time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC), Path: defaultLockKey,
			},
		},
		"held by an object without checksum": {
			setup:    func(srv *costest.Server) { srv.PutObject(bucket, defaultLockKey, []byte(lockJSON), nil) },
			wantErrs: []error{cos.ErrChecksumMissing}, wantHeld: true, wantObject: lockJSON,
		},
		"held by an object that is not a lock": {
			setup:    func(srv *costest.Server) { srv.PutState(bucket, defaultLockKey, []byte("not json")) },
			wantErrs: []error{cos.ErrInvalidLock}, wantHeld: true, wantObject: "not json",
		},
		"invalid workspace": {
			workspace: "../other", wantErrs: []error{cos.ErrInvalidConfig},
		},
		"no lock ID": {
			info: func(i *cos.LockInfo) { i.ID = "" },
		},
		"access denied": {
			setup:    func(srv *costest.Server) { srv.DenyAccess(bucket, true) },
			wantErrs: []error{cos.ErrAccessDenied},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			if tc.setup != nil {
				tc.setup(srv)
			}
			workspace, key := tc.workspace, tc.lockKey
			if workspace == "" {
				workspace = cos.DefaultWorkspace
			}
			if key == "" {
				key = defaultLockKey
			}
			info := newLockInfo()
			if tc.info != nil {
				tc.info(&info)
			}
			c := newClient(t, srv, baseConfig())

			id, err := c.AcquireLock(context.Background(), workspace, info)
			assertNoSecrets(t, err)
			if diff := errorsDiff(tc.wantErrs, err); diff != "" {
				t.Errorf("AcquireLock() error = %v; sentinels (-want +got):\n%s", err, diff)
			}
			holder, held := heldBy(err)
			if held != tc.wantHeld {
				t.Errorf("AcquireLock() error = %v, a *LockHeldError: %t, want %t", err, held, tc.wantHeld)
			}
			if diff := cmp.Diff(tc.wantHolder, holder); diff != "" {
				t.Errorf("holder (-want +got):\n%s", diff)
			}
			wantID := ""
			if tc.wantObject != "" && err == nil {
				wantID = md5hex([]byte(tc.wantObject))
			}
			if err == nil && tc.wantObject == "" {
				t.Error("AcquireLock() succeeded, want an error")
			}
			if id != wantID {
				t.Errorf("AcquireLock() id = %q, want %q", id, wantID)
			}

			data, meta, ok := srv.Object(bucket, key)
			if diff := cmp.Diff(tc.wantObject, string(data)); diff != "" || ok != (tc.wantObject != "") {
				t.Errorf("lock object (present %t) (-want +got):\n%s", ok, diff)
			}
			if err == nil {
				if meta["x-cos-meta-md5"] != id {
					t.Errorf("x-cos-meta-md5 = %q, want the lock ID %q", meta["x-cos-meta-md5"], id)
				}
				got, rerr := c.ReadLock(context.Background(), workspace)
				if rerr != nil || got == nil || got.ID != id {
					t.Errorf("ReadLock() = %+v, %v; want the lock with ID %s", got, rerr, id)
				}
			}
			if n := requestsTo(srv, http.MethodPut, key); n != tc.wantPUTs {
				t.Errorf("PUTs to the lock object = %d, want %d", n, tc.wantPUTs)
			}
		})
	}
}

// TestAcquireLockReadsBackAsWritten checks every field ReadLock returns
// for a lock AcquireLock took.
func TestAcquireLockReadsBackAsWritten(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, srv, baseConfig())
	id, err := c.AcquireLock(context.Background(), "staging", newLockInfo())
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ReadLock(context.Background(), "staging")
	if err != nil {
		t.Fatal(err)
	}
	want := newLockInfo()
	want.ID, want.Path = id, "env/staging/terraform.tfstate.tflock"
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("ReadLock() after AcquireLock (-want +got):\n%s", diff)
	}
}

// hookTransport passes requests to http.DefaultTransport and lets a test
// act around them: before runs first and may answer instead (a non-nil
// response or error), after sees the answer.
type hookTransport struct {
	before func(r *http.Request) (*http.Response, error)
	after  func(r *http.Request, resp *http.Response)
}

func (h *hookTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.before != nil {
		if resp, err := h.before(r); resp != nil || err != nil {
			return resp, err
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && h.after != nil {
		h.after(r, resp)
	}
	return resp, err
}

var errAnswerLost = errors.New("connection reset by the test")

// TestAcquireLockRace makes things happen between AcquireLock's check and
// its write, through the client's transport.
func TestAcquireLockRace(t *testing.T) {
	theirs := []byte(strings.Replace(lockJSON, "env/staging/", "env/", 1))
	isLock := func(r *http.Request, method string) bool {
		return r.Method == method && r.URL.Path == "/"+defaultLockKey
	}
	cases := map[string]struct {
		hook       func(srv *costest.Server) *hookTransport
		wantHeld   bool
		wantHolder bool // the *LockHeldError names the other writer's lock
		wantObject []byte
		wantPUTs   int
	}{
		"another writer creates the lock after the check": {
			hook: func(srv *costest.Server) *hookTransport {
				var once sync.Once
				return &hookTransport{after: func(r *http.Request, resp *http.Response) {
					if isLock(r, http.MethodGet) && resp.StatusCode == http.StatusNotFound {
						once.Do(func() { srv.PutState(bucket, defaultLockKey, theirs) })
					}
				}}
			},
			wantHeld: true, wantHolder: true, wantObject: theirs, wantPUTs: 1,
		},
		"and releases it before the holder is read": {
			hook: func(srv *costest.Server) *hookTransport {
				var once sync.Once
				return &hookTransport{after: func(r *http.Request, resp *http.Response) {
					switch {
					case isLock(r, http.MethodGet) && resp.StatusCode == http.StatusNotFound:
						once.Do(func() { srv.PutState(bucket, defaultLockKey, theirs) })
					case isLock(r, http.MethodPut) && resp.StatusCode == http.StatusConflict:
						srv.DeleteObject(bucket, defaultLockKey)
					}
				}}
			},
			wantHeld: true, wantPUTs: 1,
		},
		"the answer to the write is lost, and the SDK writes again": {
			hook: func(_ *costest.Server) *hookTransport {
				var once sync.Once
				return &hookTransport{before: func(r *http.Request) (*http.Response, error) {
					var lost error
					if isLock(r, http.MethodPut) {
						once.Do(func() {
							resp, err := http.DefaultTransport.RoundTrip(r)
							if err == nil {
								_ = resp.Body.Close()
							}
							lost = errAnswerLost
						})
					}
					return nil, lost
				}}
			},
			wantObject: []byte(ourLockJSON), wantPUTs: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			c, err := cos.New(baseConfig(), cos.WithBaseURL(srv.URL(bucket)),
				cos.WithHTTPClient(&http.Client{Transport: tc.hook(srv), Timeout: 10 * time.Second}))
			if err != nil {
				t.Fatal(err)
			}
			id, err := c.AcquireLock(context.Background(), cos.DefaultWorkspace, newLockInfo())
			holder, held := heldBy(err)
			if held != tc.wantHeld || (err != nil) != tc.wantHeld {
				t.Fatalf("AcquireLock() = %q, %v; want a *LockHeldError: %t", id, err, tc.wantHeld)
			}
			if tc.wantHolder && (holder == nil || holder.ID != md5hex(theirs) || holder.Who != "user@host") {
				t.Errorf("holder = %+v, want the other writer's lock %s", holder, md5hex(theirs))
			}
			if !tc.wantHolder && holder != nil {
				t.Errorf("holder = %+v, want none", holder)
			}
			if !held && id != md5hex([]byte(ourLockJSON)) {
				t.Errorf("id = %q, want %q", id, md5hex([]byte(ourLockJSON)))
			}
			data, _, _ := srv.Object(bucket, defaultLockKey)
			if diff := cmp.Diff(string(tc.wantObject), string(data)); diff != "" {
				t.Errorf("lock object (-want +got):\n%s", diff)
			}
			if n := requestsTo(srv, http.MethodPut, defaultLockKey); n != tc.wantPUTs {
				t.Errorf("PUTs that reached the server = %d, want %d", n, tc.wantPUTs)
			}
		})
	}
}

// TestAcquireAndReleaseLock takes a lock, releases it with the returned
// ID, and takes it again.
func TestAcquireAndReleaseLock(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, srv, baseConfig())
	ctx := context.Background()

	id, err := c.AcquireLock(ctx, "staging", newLockInfo())
	if err != nil {
		t.Fatalf("AcquireLock() = %v", err)
	}
	second := newLockInfo()
	second.ID = "0d9e8f7a-6b5c-4d3e-8f1a-2b3c4d5e6f70"
	if _, err := c.AcquireLock(ctx, "staging", second); !errors.As(err, new(*cos.LockHeldError)) {
		t.Fatalf("second AcquireLock() = %v, want a *LockHeldError", err)
	}
	if err := c.ReleaseLock(ctx, "staging", id); err != nil {
		t.Fatalf("ReleaseLock(%s) = %v", id, err)
	}
	if _, _, ok := srv.Object(bucket, "env/staging/terraform.tfstate.tflock"); ok {
		t.Fatal("the lock object is still there after ReleaseLock")
	}
	id2, err := c.AcquireLock(ctx, "staging", second)
	if err != nil || id2 == id || id2 == "" {
		t.Errorf("AcquireLock() after the release = %q, %v; want a new lock ID", id2, err)
	}
}

func TestLockHeldErrorText(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := map[string]struct {
		err  *cos.LockHeldError
		want string
	}{
		"holder": {
			err:  &cos.LockHeldError{Bucket: bucket, Key: defaultLockKey, Holder: &cos.LockInfo{ID: "0123", Who: "ci@runner", Created: created}},
			want: `acquire lock object "env/terraform.tfstate.tflock" in bucket "states-1250000000": the state lock is held by ID=0123, who=ci@runner, created=2026-01-02T03:04:05Z`,
		},
		"unreadable holder": {
			err:  &cos.LockHeldError{Bucket: bucket, Key: defaultLockKey, Err: cos.ErrInvalidLock},
			want: `acquire lock object "env/terraform.tfstate.tflock" in bucket "states-1250000000": the state lock is held, by a holder that cannot be read: unreadable lock object`,
		},
		"vanished holder": {
			err:  &cos.LockHeldError{Bucket: bucket, Key: defaultLockKey},
			want: `acquire lock object "env/terraform.tfstate.tflock" in bucket "states-1250000000": the state lock is held by a writer that created the lock object first and released it again`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.err.Error()); diff != "" {
				t.Errorf("Error() (-want +got):\n%s", diff)
			}
		})
	}
}
