package stateclient

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
)

const holderJSON = `{"ID":"holder-id","Operation":"OperationTypeApply","Info":"ci","Who":"alice@runner","Version":"1.5.7","Created":"2026-01-02T03:04:05.123456789Z","Path":""}`

func holderInfo() *LockInfo {
	return &LockInfo{
		ID: "holder-id", Operation: "OperationTypeApply", Info: "ci", Who: "alice@runner", Version: "1.5.7",
		Created: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC),
	}
}

// checkHolder checks the *LockError in err's chain ("": none expected,
// "-": one with no holder).
func checkHolder(t *testing.T, err error, id string) {
	t.Helper()
	var le *LockError
	if got := errors.As(err, &le); got != (id != "") {
		t.Fatalf("errors.As(%v, *LockError) = %v, want %v", err, got, id != "")
	}
	switch {
	case le == nil:
	case id == "-" && le.Info != nil:
		t.Errorf("LockError.Info = %+v, want nil", le.Info)
	case id != "-" && (le.Info == nil || le.Info.ID != id):
		t.Errorf("LockError.Info = %+v, want ID %q", le.Info, id)
	}
}

func TestLock(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		handler  http.HandlerFunc
		wantID   bool
		wantErr  string
		is       error
		status   int    // of a *StatusError
		holderID string // of a *LockError; "-": no holder
		holder   *LockInfo
		attempts int
	}{
		"200":              {handler: respond(200, ""), wantID: true, attempts: 1},
		"409 with holder":  {handler: respond(409, holderJSON), wantErr: "state lock conflict (HTTP 409): held by ID=holder-id, operation=OperationTypeApply, who=alice@runner, version=1.5.7, info=ci, created=2026-01-02T03:04:05Z", holderID: "holder-id", holder: holderInfo(), attempts: 1},
		"423 with holder":  {handler: respond(423, holderJSON), wantErr: "(HTTP 423): held by ID=holder-id", holderID: "holder-id", holder: holderInfo(), attempts: 1},
		"423 empty body":   {handler: respond(423, ""), wantErr: "state lock conflict (HTTP 423): holder unknown: the answer names no lock holder", holderID: "-", attempts: 1},
		"409 not JSON":     {handler: respond(409, "locked!"), wantErr: "holder unknown: the lock holder is not valid LockInfo JSON", holderID: "-", attempts: 1},
		"409 cut off JSON": {handler: respond(409, holderJSON[:40]), wantErr: "holder unknown", holderID: "-", attempts: 1},
		"423 without ID":   {handler: respond(423, `{"Who":"x"}`), wantErr: "held by a lock without ID", holderID: "", holder: &LockInfo{Who: "x"}, attempts: 1},
		"401":              {handler: respond(401, ""), wantErr: "requires auth", is: ErrUnauthorized, status: 401, attempts: 1},
		"403":              {handler: respond(403, ""), wantErr: "invalid auth", is: ErrForbidden, status: 403, attempts: 1},
		"201 is an error":  {handler: respond(201, ""), wantErr: "(201 Created)", status: 201, attempts: 1},
		"500 retried":      {handler: respond(500, ""), wantErr: "LOCK URL/state/lock giving up after 3 attempt(s)", status: 500, attempts: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tc.handler)
			c := mustNew(t, fastConfig(srv.URL))
			info := NewLockInfo("OperationTypeApply", "operator@cluster")
			id, err := c.Lock(ctxT(t), info)
			checkErr(t, err, strings.ReplaceAll(tc.wantErr, "URL", srv.URL), tc.is)
			checkStatus(t, err, tc.status)
			if tc.holderID != "" {
				checkHolder(t, err, tc.holderID)
			}
			if tc.holder != nil {
				var le *LockError
				errors.As(err, &le)
				if diff := cmp.Diff(tc.holder, le.Info); diff != "" {
					t.Errorf("holder mismatch (-want +got):\n%s", diff)
				}
			}
			if want := map[bool]string{true: info.ID}[tc.wantID]; id != want {
				t.Errorf("Lock() = %q, want %q", id, want)
			}
			if got := c.heldLockID(); got != id {
				t.Errorf("held lock = %q, want %q", got, id)
			}
			reqs := srv.requests()
			if len(reqs) != tc.attempts {
				t.Fatalf("server saw %d requests, want %d", len(reqs), tc.attempts)
			}
			if r := reqs[0]; r.Method != "LOCK" || r.Path != "/state/lock" || r.ContentType != "application/json" || r.ContentMD5 == "" {
				t.Errorf("lock request %+v", r)
			}
		})
	}
}

// TestLockInfoJSON checks the wire form: seven keys, Go field names,
// Created in RFC 3339 with nanoseconds.
func TestLockInfoJSON(t *testing.T) {
	t.Parallel()
	srv := newServer(t, respond(200, ""))
	c := mustNew(t, fastConfig(srv.URL))
	info := NewLockInfo("OperationTypeApply", "operator@cluster")
	if _, err := uuid.Parse(info.ID); err != nil {
		t.Errorf("ID %q is not a UUID: %v", info.ID, err)
	}
	if info.Created.Location() != time.UTC || time.Since(info.Created) > time.Minute {
		t.Errorf("Created = %v, want now in UTC", info.Created)
	}
	info.Created = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	if _, err := c.Lock(ctxT(t), info); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(srv.requests()[0].Body), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"ID": info.ID, "Operation": "OperationTypeApply", "Info": "", "Who": "operator@cluster",
		"Version": "", "Created": "2026-01-02T03:04:05.123456789Z", "Path": "",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LockInfo JSON mismatch (-want +got):\n%s", diff)
	}
}

func TestLockNeedsID(t *testing.T) {
	t.Parallel()
	srv := newServer(t, respond(200, ""))
	if _, err := mustNew(t, fastConfig(srv.URL)).Lock(ctxT(t), LockInfo{}); err == nil || len(srv.requests()) != 0 {
		t.Errorf("Lock without ID: err %v, %d requests", err, len(srv.requests()))
	}
}

func TestUnlock(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		handler  http.HandlerFunc
		wantErr  string
		is       error
		status   int
		holderID string
		attempts int
	}{
		"200":             {handler: respond(200, ""), attempts: 1},
		"204 is an error": {handler: respond(204, ""), wantErr: "UNLOCK URL/state/lock: unexpected HTTP response (204 No Content)", status: 204, attempts: 1},
		"409 other ID":    {handler: respond(409, holderJSON), wantErr: "(HTTP 409): held by ID=holder-id", holderID: "holder-id", attempts: 1},
		"423 empty":       {handler: respond(423, ""), wantErr: "holder unknown", holderID: "-", attempts: 1},
		"401":             {handler: respond(401, ""), wantErr: "requires auth", is: ErrUnauthorized, status: 401, attempts: 1},
		"403":             {handler: respond(403, ""), wantErr: "invalid auth", is: ErrForbidden, status: 403, attempts: 1},
		"404":             {handler: respond(404, ""), wantErr: "(404 Not Found)", status: 404, attempts: 1},
		"503 retried":     {handler: respond(503, ""), wantErr: "giving up after 3 attempt(s)", status: 503, attempts: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method == "LOCK" {
					w.WriteHeader(http.StatusOK)
					return
				}
				tc.handler(w, r)
			})
			c := mustNew(t, fastConfig(srv.URL))
			ctx := ctxT(t)
			id, err := c.Lock(ctx, NewLockInfo("OperationTypeApply", "operator@cluster"))
			if err != nil {
				t.Fatal(err)
			}
			err = c.Unlock(ctx, id)
			checkErr(t, err, strings.ReplaceAll(tc.wantErr, "URL", srv.URL), tc.is)
			checkStatus(t, err, tc.status)
			if tc.holderID != "" {
				checkHolder(t, err, tc.holderID)
			}
			if held := c.heldLockID(); (held == "") != (err == nil) {
				t.Errorf("held lock %q after Unlock error %v", held, err)
			}
			reqs := srv.requests()
			if len(reqs) != 1+tc.attempts {
				t.Fatalf("server saw %d requests, want %d", len(reqs), 1+tc.attempts)
			}
			for _, r := range reqs[1:] {
				if r.Method != "UNLOCK" || r.Body != reqs[0].Body || r.ContentMD5 != reqs[0].ContentMD5 {
					t.Errorf("unlock sent %+v, want the lock body %s", r, reqs[0].Body)
				}
			}
		})
	}
}

const zeroTime = "0001-01-01T00:00:00Z"

// TestUnlockBodies covers what Unlock and ForceUnlock send in each
// situation, and what they refuse without a request.
func TestUnlockBodies(t *testing.T) {
	t.Parallel()
	forceBody := `{"ID":"other","Operation":"","Info":"","Who":"","Version":"","Created":"` + zeroTime + `","Path":""}`
	cases := map[string]struct {
		lock     bool // acquire lock "mine" first
		force    bool
		id       string
		noUnlock bool // no unlock address
		wantErr  string
		is       error
		wantBody string // of the UNLOCK; "" means no UNLOCK is sent
	}{
		"unlock held":              {lock: true, id: "mine", wantBody: "LOCKBODY"},
		"unlock without holding":   {id: "other", wantBody: forceBody},
		"unlock another ID":        {lock: true, id: "other", wantErr: `state lock conflict: held by ID=mine, operation=OperationTypeApply, who=me: lock ID "other" does not match the lock this client holds`},
		"unlock empty ID":          {id: "", wantErr: "empty lock ID"},
		"unlock disabled":          {lock: true, id: "mine", noUnlock: true},
		"force unlock":             {id: "other", force: true, wantBody: forceBody},
		"force unlock while held":  {lock: true, id: "other", force: true, wantBody: forceBody},
		"force unlock own lock":    {lock: true, id: "mine", force: true, wantBody: `{"ID":"mine","Operation":"","Info":"","Who":"","Version":"","Created":"` + zeroTime + `","Path":""}`},
		"force unlock disabled":    {id: "other", force: true, noUnlock: true, wantErr: "unlocking is disabled", is: ErrUnlockDisabled},
		"force unlock empty ID":    {id: "", force: true, wantErr: "empty lock ID"},
		"force unlock no lock URL": {id: "x", force: true, noUnlock: true, is: ErrUnlockDisabled, wantErr: "disabled"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, respond(200, ""))
			cfg := fastConfig(srv.URL)
			if tc.noUnlock {
				cfg.UnlockAddress = ""
			}
			c := mustNew(t, cfg)
			ctx := ctxT(t)
			if tc.lock {
				info := LockInfo{ID: "mine", Operation: "OperationTypeApply", Who: "me"}
				if _, err := c.Lock(ctx, info); err != nil {
					t.Fatal(err)
				}
			}
			var err error
			if tc.force {
				err = c.ForceUnlock(ctx, tc.id)
			} else {
				err = c.Unlock(ctx, tc.id)
			}
			checkErr(t, err, tc.wantErr, tc.is)
			var unlocks []request
			for _, r := range srv.requests() {
				if r.Method == "UNLOCK" {
					unlocks = append(unlocks, r)
				}
			}
			if tc.wantBody == "" {
				if len(unlocks) != 0 {
					t.Errorf("sent %d UNLOCK requests, want none", len(unlocks))
				}
				return
			}
			if len(unlocks) != 1 {
				t.Fatalf("sent %d UNLOCK requests, want 1", len(unlocks))
			}
			want := strings.ReplaceAll(tc.wantBody, "LOCKBODY", srv.requests()[0].Body)
			if diff := cmp.Diff(want, unlocks[0].Body); diff != "" {
				t.Errorf("UNLOCK body mismatch (-want +got):\n%s", diff)
			}
			wantHeld := map[bool]string{true: "mine"}[tc.lock && tc.id != "mine"]
			if got := c.heldLockID(); got != wantHeld {
				t.Errorf("held lock after unlock = %q, want %q", got, wantHeld)
			}
		})
	}
}

// TestForceUnlockEmptyBody checks that the empty-body UNLOCK is what
// terraform force-unlock sends from a new process: an empty body with
// Content-Type and the Content-MD5 of no bytes (TestEmptyUnlockLikeTerraform
// compares it with terraform's own); that it forgets a lock the client
// held; and that it sends nothing without an unlock address.
func TestForceUnlockEmptyBody(t *testing.T) {
	t.Parallel()
	srv := newServer(t, respond(200, ""))
	c := mustNew(t, fastConfig(srv.URL))
	ctx := ctxT(t)
	if _, err := c.Lock(ctx, LockInfo{ID: "mine"}); err != nil {
		t.Fatal(err)
	}
	if err := c.ForceUnlockEmptyBody(ctx); err != nil {
		t.Fatal(err)
	}
	got := srv.requests()[1]
	want := request{Method: "UNLOCK", Path: "/state/lock", Auth: got.Auth, At: got.At,
		ContentType: "application/json", ContentMD5: "1B2M2Y8AsgTpgAmY7PhCfg=="}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("empty-body UNLOCK mismatch (-want +got):\n%s", diff)
	}
	if held := c.heldLockID(); held != "" {
		t.Errorf("held lock after the empty-body unlock = %q, want none", held)
	}

	cfg := fastConfig(srv.URL)
	cfg.UnlockAddress = ""
	if err := mustNew(t, cfg).ForceUnlockEmptyBody(ctx); !errors.Is(err, ErrUnlockDisabled) {
		t.Errorf("without an unlock address: %v, want ErrUnlockDisabled", err)
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestLockingDisabled(t *testing.T) {
	t.Parallel()
	srv := newServer(t, respond(200, ""))
	cfg := fastConfig(srv.URL)
	cfg.LockAddress, cfg.UnlockAddress = "", ""
	c := mustNew(t, cfg)
	id, err := c.Lock(ctxT(t), NewLockInfo("OperationTypeApply", "me"))
	if id != "" || err != nil {
		t.Errorf("Lock() = %q, %v; want \"\", nil", id, err)
	}
	if err := c.Unlock(ctxT(t), "x"); err != nil {
		t.Errorf("Unlock() = %v, want nil", err)
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("sent %d requests, want none", n)
	}
}

// TestCustomMethods checks that configured methods are used.
func TestCustomMethods(t *testing.T) {
	t.Parallel()
	srv := newServer(t, respond(200, ""))
	cfg := fastConfig(srv.URL)
	cfg.UpdateMethod, cfg.LockMethod, cfg.UnlockMethod = "PUT", "POST", "DELETE"
	c := mustNew(t, cfg)
	ctx := ctxT(t)
	id, err := c.Lock(ctx, NewLockInfo("OperationTypeApply", "me"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := c.Unlock(ctx, id); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range srv.requests() {
		got = append(got, r.Method+" "+r.Path)
	}
	if want := []string{"POST /state/lock", "PUT /state", "DELETE /state/lock"}; !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

// TestResume checks that a client that resumes a lock another client took
// releases it with the very body the lock was taken with, as the client
// that took it would, and that Resume refuses a LockInfo without an ID.
func TestResume(t *testing.T) {
	t.Parallel()
	info := LockInfo{ID: "mine", Operation: "OperationTypeInvalid", Info: "freeze", Who: "operator/ns/name",
		Created: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	cases := map[string]struct {
		resume  LockInfo
		unlock  string
		wantErr string
		// wantUnlock is true when the UNLOCK must carry the LOCK's body.
		wantUnlock bool
	}{
		"resumed lock":   {resume: info, unlock: "mine", wantUnlock: true},
		"another lock":   {resume: info, unlock: "other", wantErr: `lock ID "other" does not match the lock this client holds`},
		"LockInfo no ID": {resume: LockInfo{Who: "x"}, wantErr: "resume: the LockInfo has no ID"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, respond(200, ""))
			ctx := ctxT(t)
			if _, err := mustNew(t, fastConfig(srv.URL)).Lock(ctx, info); err != nil {
				t.Fatal(err)
			}
			resumed := mustNew(t, fastConfig(srv.URL))
			err := resumed.Resume(tc.resume)
			if err == nil {
				err = resumed.Unlock(ctx, tc.unlock)
			}
			checkErr(t, err, tc.wantErr, nil)
			reqs := srv.requests()
			if !tc.wantUnlock {
				if len(reqs) != 1 {
					t.Errorf("server saw %d requests, want only the LOCK", len(reqs))
				}
				return
			}
			if len(reqs) != 2 || reqs[1].Method != "UNLOCK" {
				t.Fatalf("server saw %+v, want LOCK then UNLOCK", reqs)
			}
			if diff := cmp.Diff(reqs[0].Body, reqs[1].Body); diff != "" {
				t.Errorf("UNLOCK body differs from the LOCK body (-lock +unlock):\n%s", diff)
			}
		})
	}
}
