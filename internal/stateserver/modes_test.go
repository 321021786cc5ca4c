package stateserver

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// exchange is one request and the answer it must get.
type exchange struct {
	method, path string
	body         []byte
	user, pass   string // basic auth when user or pass is set
	want         response
}

// runSteps sends each exchange in order to a new server with opts, over real
// TCP, and compares every answer, its body passed through normalize when
// set.
func runSteps(t *testing.T, opts []Option, steps []exchange, normalize func(string) string) {
	t.Helper()
	ts := startServer(t, New(NewMemoryStore(), opts...))
	var got, want []response
	for _, s := range steps {
		var header http.Header
		if s.user != "" || s.pass != "" {
			header = http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(s.user+":"+s.pass))}}
		}
		answer, _ := send(t, ts.Client(), s.method, ts.URL+s.path, s.body, header)
		if normalize != nil {
			answer.Body = normalize(answer.Body)
		}
		got = append(got, answer)
		want = append(want, s.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
}

// TestLockModes checks each lock behaviour of modes.go, and how they
// combine with one another and with UnlockBodies, against the requests a
// conformance check sends: a conflicting LOCK, a LOCK again under the
// holder's ID, an UNLOCK naming a wrong ID, and the three release bodies.
func TestLockModes(t *testing.T) {
	a, b := lockInfo("lock-a"), lockInfo("lock-b")
	idOnly := []byte(`{"ID":"lock-a"}`)
	wrongID := []byte(`{"ID":"wrong"}`)
	const path = "/state/s"
	lock := func(body []byte, want response) exchange {
		return exchange{method: MethodLock, path: path, body: body, want: want}
	}
	unlock := func(body []byte, want response) exchange {
		return exchange{method: MethodUnlock, path: path, body: body, want: want}
	}
	ok := response{Status: http.StatusOK}
	released := response{Status: http.StatusOK, Body: string(a)}
	cases := map[string]struct {
		opts  []Option
		steps []exchange
	}{
		"default: 423 with the holder, UNLOCK checks the ID": {
			steps: []exchange{
				lock(a, ok),
				lock(b, response{Status: http.StatusLocked, Body: string(a)}),
				lock(a, response{Status: http.StatusLocked, Body: string(a)}),
				unlock(wrongID, response{Status: http.StatusConflict, Body: string(a)}),
				{method: http.MethodPost, path: path, body: []byte(`{}`), want: response{Status: http.StatusLocked, Body: string(a)}},
				unlock(idOnly, released),
			},
		},
		"409 with the holder": {
			opts: []Option{WithConflictAnswer(ConflictHolder409)},
			steps: []exchange{
				lock(a, ok),
				lock(b, response{Status: http.StatusConflict, Body: string(a)}),
				{method: http.MethodPost, path: path, body: []byte(`{}`), want: response{Status: http.StatusConflict, Body: string(a)}},
				unlock(wrongID, response{Status: http.StatusConflict, Body: string(a)}),
				unlock(a, released),
			},
		},
		"409 Conflict as plain text": {
			opts: []Option{WithConflictAnswer(ConflictText409)},
			steps: []exchange{
				lock(a, ok),
				lock(b, response{Status: http.StatusConflict, Body: "Conflict"}),
				{method: http.MethodDelete, path: path, want: response{Status: http.StatusConflict, Body: "Conflict"}},
				unlock(wrongID, response{Status: http.StatusConflict, Body: "Conflict"}),
				unlock([]byte{}, released),
			},
		},
		"423 Locked as plain text": {
			opts: []Option{WithConflictAnswer(ConflictText423)},
			steps: []exchange{
				lock(a, ok),
				lock(b, response{Status: http.StatusLocked, Body: "Locked"}),
				unlock(wrongID, response{Status: http.StatusConflict, Body: "Conflict"}),
				unlock(a, released),
			},
		},
		"re-entrant LOCK": {
			opts: []Option{WithReentrantLock()},
			steps: []exchange{
				lock(a, ok),
				lock(lockInfo("lock-a"), ok),
				lock(idOnly, ok),
				lock(b, response{Status: http.StatusLocked, Body: string(a)}),
				unlock(a, released), // the stored LockInfo is the first one
			},
		},
		"UNLOCK ignores its body": {
			opts: []Option{WithUnlockCheck(UnlockIgnoresBody)},
			steps: []exchange{
				lock(a, ok),
				unlock(wrongID, released),
				lock(b, ok),
				unlock(idOnly, response{Status: http.StatusOK, Body: string(b)}),
				unlock(a, response{Status: http.StatusConflict}), // nothing held
			},
		},
		"UNLOCK ignores its body, but refuses the forms UnlockBodies refuses": {
			opts: []Option{WithUnlockCheck(UnlockIgnoresBody), WithUnlockBodies(AcceptNoForceUnlock)},
			steps: []exchange{
				lock(a, ok),
				unlock(wrongID, response{Status: http.StatusBadRequest}),
				unlock([]byte{}, response{Status: http.StatusInternalServerError, Body: "an empty unlock body is not supported\n"}),
				unlock(idOnly, response{Status: http.StatusBadRequest}),
				unlock(a, released),
			},
		},
		"UNLOCK needs the exact body": {
			opts: []Option{WithUnlockCheck(UnlockExactBody), WithUnlockBodies(AcceptAnyUnlock)},
			steps: []exchange{
				lock(a, ok),
				unlock(wrongID, response{Status: http.StatusConflict, Body: string(wrongID)}),
				unlock(idOnly, response{Status: http.StatusConflict, Body: string(idOnly)}),
				unlock([]byte{}, response{Status: http.StatusConflict}),
				unlock([]byte(string(a)+" "), response{Status: http.StatusConflict, Body: string(a) + " "}),
				unlock(a, released),
				unlock(a, response{Status: http.StatusConflict, Body: string(a)}),
			},
		},
		"exact body, 409 plain text and re-entrant": {
			opts: []Option{WithUnlockCheck(UnlockExactBody), WithConflictAnswer(ConflictText409), WithReentrantLock()},
			steps: []exchange{
				lock(a, ok),
				lock(a, ok),
				lock(b, response{Status: http.StatusConflict, Body: "Conflict"}),
				unlock(idOnly, response{Status: http.StatusConflict, Body: string(idOnly)}),
				unlock(a, released),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runSteps(t, tc.opts, tc.steps, nil)
		})
	}
}
