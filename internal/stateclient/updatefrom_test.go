package stateclient

import (
	"bytes"
	stdcmp "cmp"
	"crypto/md5" // protocol checksum
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/stateserver"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// stateFile writes data to a new file in a test directory and returns it
// open, its offset at the end (where a caller that computed the MD5 by
// reading it leaves it), with the MD5 of data.
func stateFile(tb testing.TB, data []byte) (*os.File, [16]byte) {
	tb.Helper()
	f, err := os.Create(filepath.Join(tb.TempDir(), "state.json"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = f.Close() })
	if _, err := f.Write(data); err != nil {
		tb.Fatal(err)
	}
	return f, md5.Sum(data)
}

func TestUpdateFrom(t *testing.T) {
	t.Parallel()
	holder := `{"ID":"holder-id","Operation":"OperationTypeApply","Info":"","Who":"a@b","Version":"1.5.7","Created":"2026-01-02T03:04:05.123456789Z","Path":""}`
	cases := map[string]struct {
		handler  http.HandlerFunc
		method   string // UpdateMethod; empty: default POST
		state    string // empty: smallState
		wantErr  string
		is       error
		status   int
		holderID string // of a *LockError
		attempts int
	}{
		"200":             {handler: respond(200, ""), attempts: 1},
		"201":             {handler: respond(201, ""), attempts: 1},
		"204":             {handler: respond(204, ""), attempts: 1},
		"PUT method":      {handler: respond(200, ""), method: "PUT", attempts: 1},
		"larger state":    {handler: respond(200, ""), state: string(benchState(1 << 20)), attempts: 1},
		"202 is an error": {handler: respond(202, ""), wantErr: "unexpected HTTP response (202 Accepted)", status: 202, attempts: 1},
		"401":             {handler: respond(401, ""), wantErr: "requires auth", is: ErrUnauthorized, status: 401, attempts: 1},
		"403":             {handler: respond(403, ""), wantErr: "invalid auth", is: ErrForbidden, status: 403, attempts: 1},
		"409 locked":      {handler: respond(409, holder), wantErr: "state lock conflict (HTTP 409): held by ID=holder-id", holderID: "holder-id", attempts: 1},
		"423 locked":      {handler: respond(423, holder), wantErr: "state lock conflict (HTTP 423): held by ID=holder-id", holderID: "holder-id", attempts: 1},
		"423 no holder":   {handler: respond(423, "Locked"), wantErr: "state lock conflict (HTTP 423): holder unknown", holderID: "-", attempts: 1},
		"503 then 200":    {handler: sequence(respond(503, ""), respond(200, "")), attempts: 2},
		"hang-up then 200": {
			handler: sequence(hangUp, respond(200, "")), attempts: 2,
		},
		"502 retried": {handler: respond(502, ""), wantErr: "giving up after 3 attempt(s): last answer 502 Bad Gateway", status: 502, attempts: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tc.handler)
			cfg := fastConfig(srv.URL)
			cfg.UpdateMethod = tc.method
			state := stdcmp.Or(tc.state, smallState)
			f, sum := stateFile(t, []byte(state))
			err := mustNew(t, cfg).UpdateFrom(ctxT(t), "lock-7", f, int64(len(state)), sum)
			checkErr(t, err, tc.wantErr, tc.is)
			checkStatus(t, err, tc.status)
			checkHolder(t, err, tc.holderID)
			reqs := srv.requests()
			if len(reqs) != tc.attempts {
				t.Fatalf("server saw %d requests, want %d", len(reqs), tc.attempts)
			}
			// Every attempt, a retry included, carries the whole body.
			want := request{
				Method: stdcmp.Or(tc.method, "POST"), Path: "/state", Query: "ID=lock-7", ContentType: "application/json",
				ContentMD5: base64.StdEncoding.EncodeToString(sum[:]), Body: state,
			}
			for _, r := range reqs {
				r.At = want.At
				if diff := cmp.Diff(want, r); diff != "" {
					t.Errorf("request mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestUpdateFromLockID checks the ID query parameter: the one given, else
// the one of the lock the client holds, merged into the address's query.
func TestUpdateFromLockID(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		query  string // of the address
		held   string // lock the client holds; "": none
		lockID string // given to UpdateFrom
		want   url.Values
	}{
		"given":                  {lockID: "lock-9", want: url.Values{"ID": {"lock-9"}}},
		"given, existing query":  {query: "?env=prod", lockID: "lock-9", want: url.Values{"ID": {"lock-9"}, "env": {"prod"}}},
		"given, stale ID query":  {query: "?ID=old", lockID: "lock-9", want: url.Values{"ID": {"lock-9"}}},
		"given wins over held":   {held: "lock-1", lockID: "lock-9", want: url.Values{"ID": {"lock-9"}}},
		"held":                   {held: "lock-1", want: url.Values{"ID": {"lock-1"}}},
		"held, existing query":   {query: "?env=prod", held: "lock-1", want: url.Values{"ID": {"lock-1"}, "env": {"prod"}}},
		"none":                   {want: url.Values{}},
		"none, existing query":   {query: "?env=prod", want: url.Values{"env": {"prod"}}},
		"escaped":                {lockID: "a b&c", want: url.Values{"ID": {"a b&c"}}},
		"none, stale ID in addr": {query: "?ID=old", want: url.Values{"ID": {"old"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, respond(200, ""))
			cfg := fastConfig(srv.URL)
			cfg.Address += tc.query
			c := mustNew(t, cfg)
			ctx := ctxT(t)
			if tc.held != "" {
				info := NewLockInfo("OperationTypeApply", "test@host")
				info.ID = tc.held
				if _, err := c.Lock(ctx, info); err != nil {
					t.Fatal(err)
				}
			}
			f, sum := stateFile(t, []byte(smallState))
			if err := c.UpdateFrom(ctx, tc.lockID, f, int64(len(smallState)), sum); err != nil {
				t.Fatal(err)
			}
			reqs := srv.requests()
			got, err := url.ParseQuery(reqs[len(reqs)-1].Query)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("query mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUpdateFromBodyMismatch gives UpdateFrom a file that is not the state
// announced: nothing is stored, and nothing is retried.
func TestUpdateFromBodyMismatch(t *testing.T) {
	t.Parallel()
	data := []byte(smallState)
	other := bytes.Clone(data)
	other[len(other)-2] = ' ' // same size, another MD5
	cases := map[string]struct {
		size     int64
		sum      [16]byte
		requests int // the server counts a request it could not read whole too
	}{
		"size too large":  {size: int64(len(data)) + 1, sum: md5.Sum(data)},
		"size too small":  {size: int64(len(data)) - 1, sum: md5.Sum(data[:len(data)-1])},
		"negative size":   {size: -1, sum: md5.Sum(nil)},
		"MD5 differs":     {size: int64(len(data)), sum: md5.Sum(other), requests: 1},
		"empty, MD5 of x": {size: 0, sum: md5.Sum([]byte("x"))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var requests atomic.Int32
			store := stateserver.NewMemoryStore()
			srv := stateserver.New(store)
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				srv.ServeHTTP(w, r)
			}))
			t.Cleanup(ts.Close)
			c := mustNew(t, referenceConfig(ts.URL, "prod", false))
			ctx := ctxT(t)
			content := data
			if tc.size == 0 {
				content = nil
			}
			f, _ := stateFile(t, content)
			err := c.UpdateFrom(ctx, "", f, tc.size, tc.sum)
			if !errors.Is(err, ErrBodyMismatch) {
				t.Fatalf("UpdateFrom() = %v, want ErrBodyMismatch", err)
			}
			if got, err := fetchAll(ctx, c); got != nil || err != nil {
				t.Errorf("the server holds %q (%v), want no state", got, err)
			}
			// The GET of fetchAll is one more request.
			if got := int(requests.Load()) - 1; got > tc.requests {
				t.Errorf("the server saw %d update requests, want at most %d", got, tc.requests)
			}
		})
	}
}

func TestUpdateFromEmptyBody(t *testing.T) {
	t.Parallel()
	srv := newServer(t, respond(200, ""))
	f, sum := stateFile(t, nil)
	if err := mustNew(t, fastConfig(srv.URL)).UpdateFrom(ctxT(t), "", f, 0, sum); err != nil {
		t.Fatal(err)
	}
	r := srv.requests()[0]
	if r.Body != "" || r.ContentMD5 != "1B2M2Y8AsgTpgAmY7PhCfg==" || r.ContentType != "application/json" {
		t.Errorf("empty update sent %+v", r)
	}
}

// exclusiveFile is a slow file that records whether two calls ever used
// it at the same time.
type exclusiveFile struct {
	*os.File
	busy    atomic.Int32
	overlap atomic.Bool
}

func (f *exclusiveFile) enter() func() {
	if f.busy.Add(1) > 1 {
		f.overlap.Store(true)
	}
	return func() { f.busy.Add(-1) }
}

// Read is slow, so that a transport still sending an abandoned attempt is
// most likely inside a Read when the retry starts.
func (f *exclusiveFile) Read(p []byte) (int, error) {
	defer f.enter()()
	time.Sleep(time.Millisecond)
	return f.File.Read(p)
}

func (f *exclusiveFile) Seek(offset int64, whence int) (int64, error) {
	defer f.enter()()
	return f.File.Seek(offset, whence)
}

// TestUpdateFromRetryWhileTheFirstAttemptIsSent has the server answer 503
// before reading the body: net/http is still sending the first attempt
// (from a slow file) when the retry rewinds the file. The retry must still
// send the whole body: were the abandoned attempt's reads not cut off, its
// last one would take bytes from the rewound file and the retry's body
// would come out short of them.
func TestUpdateFromRetryWhileTheFirstAttemptIsSent(t *testing.T) {
	t.Parallel()
	data := benchState(1 << 20)
	var mu sync.Mutex
	var got [][16]byte // MD5 of each body the server read whole
	first := true
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		early := first
		first = false
		mu.Unlock()
		if early {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		h := md5.New()
		if _, err := io.Copy(h, r.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, [16]byte(h.Sum(nil)))
		mu.Unlock()
	}))
	t.Cleanup(ts.Close)
	ts.Config.ErrorLog = discardLogger()

	f, sum := stateFile(t, data)
	body := &exclusiveFile{File: f}
	if err := mustNew(t, fastConfig(ts.URL)).UpdateFrom(ctxT(t), "", body, int64(len(data)), sum); err != nil {
		t.Fatalf("UpdateFrom() = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([][16]byte{sum}, got); diff != "" {
		t.Errorf("bodies received whole (-want +got):\n%s", diff)
	}
	if body.overlap.Load() {
		t.Error("the file was read or rewound by two at once")
	}
}

// TestUpdateFromDoesNotHoldTheState writes a 32 MiB state twice (a 503,
// then a 200) to a server that only hashes it, and checks that the bytes
// allocated meanwhile, client and server together, stay far below the
// size of the state: the body is streamed from the file, never buffered.
// Not parallel: AllocatedBy counts every goroutine's allocations.
func TestUpdateFromDoesNotHoldTheState(t *testing.T) {
	const size = 32 << 20
	f, err := os.Create(filepath.Join(t.TempDir(), "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	h := md5.New()
	chunk := benchState(1 << 20)
	for range size / len(chunk) {
		if _, err := io.MultiWriter(f, h).Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	sum := [16]byte(h.Sum(nil))

	var mu sync.Mutex
	var got [][16]byte
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := md5.New()
		_, err := io.Copy(h, r.Body)
		mu.Lock()
		got = append(got, [16]byte(h.Sum(nil)))
		n := len(got)
		mu.Unlock()
		switch {
		case err != nil:
			w.WriteHeader(http.StatusBadRequest)
		case n == 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(ts.Close)
	c := mustNew(t, fastConfig(ts.URL))
	ctx := ctxT(t)

	allocated := testtools.AllocatedBy(func() {
		err = c.UpdateFrom(ctx, "", f, size, sum)
	})
	if err != nil {
		t.Fatalf("UpdateFrom() = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([][16]byte{sum, sum}, got); diff != "" {
		t.Errorf("bodies received (-want +got):\n%s", diff)
	}
	if limit := uint64(size / 16); allocated > limit {
		t.Errorf("allocated %d bytes while writing a %d byte state twice, want at most %d", allocated, size, limit)
	}
	t.Logf("allocated %d bytes while writing a %d byte state twice", allocated, size)
}
