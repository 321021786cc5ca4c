package stateserver

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRoutes(t *testing.T) {
	state := []byte(`{"version":4,"serial":1}`)
	newState := []byte(`{"version":4,"serial":2}`)
	holder := lockInfo("holder-id")
	other := lockInfo("other-id")

	cases := map[string]struct {
		seed       stored
		method     string
		path       string
		body       []byte
		header     http.Header
		want       response
		wantRecord stored
		wantAllow  string
	}{
		"GET missing state": {
			method: http.MethodGet, path: "/state/x",
			want: response{Status: http.StatusNotFound, Body: "no state\n"},
		},
		"GET state": {
			seed:   stored{State: state},
			method: http.MethodGet, path: "/state/x",
			want:       response{Status: http.StatusOK, Body: string(state)},
			wantRecord: stored{State: state},
		},
		"GET empty state": {
			seed:   stored{State: []byte{}},
			method: http.MethodGet, path: "/state/x",
			want:       response{Status: http.StatusOK},
			wantRecord: stored{State: []byte{}},
		},
		"POST stores the state": {
			method: http.MethodPost, path: "/state/x", body: state,
			want:       response{Status: http.StatusOK},
			wantRecord: stored{State: state},
		},
		"PUT replaces the state": {
			seed:   stored{State: state},
			method: http.MethodPut, path: "/state/x", body: newState,
			want:       response{Status: http.StatusOK},
			wantRecord: stored{State: newState},
		},
		"DELETE removes the state": {
			seed:   stored{State: state},
			method: http.MethodDelete, path: "/state/x",
			want: response{Status: http.StatusOK},
		},
		"DELETE missing state": {
			method: http.MethodDelete, path: "/state/x",
			want: response{Status: http.StatusOK},
		},
		"DELETE while locked": {
			seed:   stored{State: state, Lock: holder},
			method: http.MethodDelete, path: "/state/x",
			want:       response{Status: http.StatusLocked, Body: string(holder)},
			wantRecord: stored{State: state, Lock: holder},
		},
		"DELETE while locked with another ID": {
			seed:   stored{State: state, Lock: holder},
			method: http.MethodDelete, path: "/state/x?ID=other-id",
			want:       response{Status: http.StatusLocked, Body: string(holder)},
			wantRecord: stored{State: state, Lock: holder},
		},
		"DELETE while locked with the holder's ID keeps the lock": {
			seed:   stored{State: state, Lock: holder},
			method: http.MethodDelete, path: "/state/x?ID=holder-id",
			want:       response{Status: http.StatusOK},
			wantRecord: stored{Lock: holder},
		},
		"DELETE while locked by an unreadable LockInfo": {
			seed:   stored{State: state, Lock: []byte("garbage")},
			method: http.MethodDelete, path: "/state/x",
			want:       response{Status: http.StatusLocked, Body: "garbage"},
			wantRecord: stored{State: state, Lock: []byte("garbage")},
		},
		"DELETE missing state while locked": {
			seed:   stored{Lock: holder},
			method: http.MethodDelete, path: "/state/x",
			want:       response{Status: http.StatusLocked, Body: string(holder)},
			wantRecord: stored{Lock: holder},
		},
		"LOCK while unlocked": {
			seed:   stored{State: state},
			method: MethodLock, path: "/state/x", body: holder,
			want:       response{Status: http.StatusOK},
			wantRecord: stored{State: state, Lock: holder},
		},
		"LOCK while locked": {
			seed:   stored{Lock: holder},
			method: MethodLock, path: "/state/x", body: other,
			want:       response{Status: http.StatusLocked, Body: string(holder)},
			wantRecord: stored{Lock: holder},
		},
		"LOCK again with the holder's own ID": {
			seed:   stored{Lock: holder},
			method: MethodLock, path: "/state/x", body: holder,
			want:       response{Status: http.StatusLocked, Body: string(holder)},
			wantRecord: stored{Lock: holder},
		},
		"LOCK with a body that is not JSON": {
			method: MethodLock, path: "/state/x", body: []byte("not json"),
			want: response{Status: http.StatusBadRequest, Body: "the body must be a LockInfo JSON object with a non-empty ID\n"},
		},
		"LOCK without an ID": {
			method: MethodLock, path: "/state/x", body: []byte(`{"ID":"","Who":"me"}`),
			want: response{Status: http.StatusBadRequest, Body: "the body must be a LockInfo JSON object with a non-empty ID\n"},
		},
		"LOCK with a body over 64 KiB": {
			method: MethodLock, path: "/state/x", body: []byte(`{"ID":"big","Info":"` + strings.Repeat("i", 64<<10) + `"}`),
			want: response{Status: http.StatusRequestEntityTooLarge, Body: "request body too large\n"},
		},
		"LOCK with an empty body": {
			method: MethodLock, path: "/state/x", body: []byte{},
			want: response{Status: http.StatusBadRequest, Body: "the body must be a LockInfo JSON object with a non-empty ID\n"},
		},
		"UNLOCK by the holder": {
			seed:   stored{State: state, Lock: holder},
			method: MethodUnlock, path: "/state/x", body: holder,
			want:       response{Status: http.StatusOK, Body: string(holder)},
			wantRecord: stored{State: state},
		},
		"UNLOCK with only the holder's ID (OpenTofu force-unlock)": {
			seed:   stored{Lock: holder},
			method: MethodUnlock, path: "/state/x", body: []byte(`{"ID":"holder-id","Operation":"","Info":"","Who":"","Version":"","Created":"0001-01-01T00:00:00Z","Path":""}`),
			want: response{Status: http.StatusOK, Body: string(holder)},
		},
		"UNLOCK by someone else": {
			seed:   stored{Lock: holder},
			method: MethodUnlock, path: "/state/x", body: other,
			want:       response{Status: http.StatusConflict, Body: string(holder)},
			wantRecord: stored{Lock: holder},
		},
		"UNLOCK while unlocked": {
			seed:   stored{State: state},
			method: MethodUnlock, path: "/state/x", body: holder,
			want:       response{Status: http.StatusConflict},
			wantRecord: stored{State: state},
		},
		"UNLOCK with an empty body forces the unlock": {
			seed:   stored{State: state, Lock: holder},
			method: MethodUnlock, path: "/state/x", body: []byte{},
			want:       response{Status: http.StatusOK, Body: string(holder)},
			wantRecord: stored{State: state},
		},
		"UNLOCK without a body forces the unlock": {
			seed:   stored{Lock: holder},
			method: MethodUnlock, path: "/state/x",
			want: response{Status: http.StatusOK, Body: string(holder)},
		},
		"forced UNLOCK while unlocked": {
			method: MethodUnlock, path: "/state/x", body: []byte{},
			want: response{Status: http.StatusConflict},
		},
		"UNLOCK with a body that is not JSON": {
			seed:   stored{Lock: holder},
			method: MethodUnlock, path: "/state/x", body: []byte("nope"),
			want:       response{Status: http.StatusBadRequest, Body: "the body must be empty (force unlock) or a LockInfo JSON object with a non-empty ID\n"},
			wantRecord: stored{Lock: holder},
		},
		"update while locked without ID": {
			seed:   stored{State: state, Lock: holder},
			method: http.MethodPost, path: "/state/x", body: newState,
			want:       response{Status: http.StatusLocked, Body: string(holder)},
			wantRecord: stored{State: state, Lock: holder},
		},
		"update while locked with another ID": {
			seed:   stored{State: state, Lock: holder},
			method: http.MethodPut, path: "/state/x?ID=other-id", body: newState,
			want:       response{Status: http.StatusLocked, Body: string(holder)},
			wantRecord: stored{State: state, Lock: holder},
		},
		"update while locked with the holder's ID": {
			seed:   stored{State: state, Lock: holder},
			method: http.MethodPost, path: "/state/x?ID=holder-id", body: newState,
			want:       response{Status: http.StatusOK},
			wantRecord: stored{State: newState, Lock: holder},
		},
		"update while unlocked with a stale ID": {
			seed:   stored{State: state},
			method: http.MethodPost, path: "/state/x?ID=stale-id", body: newState,
			want:       response{Status: http.StatusOK},
			wantRecord: stored{State: newState},
		},
		"update while locked by an unreadable LockInfo": {
			seed:   stored{State: state, Lock: []byte("garbage")},
			method: http.MethodPost, path: "/state/x?ID=", body: newState,
			want:       response{Status: http.StatusLocked, Body: "garbage"},
			wantRecord: stored{State: state, Lock: []byte("garbage")},
		},
		"lock path POST locks": {
			method: http.MethodPost, path: "/state/x/lock", body: holder,
			want:       response{Status: http.StatusOK},
			wantRecord: stored{Lock: holder},
		},
		"lock path LOCK locks": {
			method: MethodLock, path: "/state/x/lock", body: holder,
			want:       response{Status: http.StatusOK},
			wantRecord: stored{Lock: holder},
		},
		"lock path POST while locked": {
			seed:   stored{Lock: holder},
			method: http.MethodPost, path: "/state/x/lock", body: other,
			want:       response{Status: http.StatusLocked, Body: string(holder)},
			wantRecord: stored{Lock: holder},
		},
		"lock path DELETE unlocks": {
			seed:   stored{State: state, Lock: holder},
			method: http.MethodDelete, path: "/state/x/lock", body: holder,
			want:       response{Status: http.StatusOK, Body: string(holder)},
			wantRecord: stored{State: state},
		},
		"lock path DELETE by someone else": {
			seed:   stored{Lock: holder},
			method: http.MethodDelete, path: "/state/x/lock", body: other,
			want:       response{Status: http.StatusConflict, Body: string(holder)},
			wantRecord: stored{Lock: holder},
		},
		"lock path GET": {
			seed:   stored{Lock: holder},
			method: http.MethodGet, path: "/state/x/lock",
			want:       response{Status: http.StatusMethodNotAllowed, Body: "method not allowed\n"},
			wantRecord: stored{Lock: holder},
			wantAllow:  "POST, DELETE, LOCK, UNLOCK",
		},
		"lock path PUT": {
			method: http.MethodPut, path: "/state/x/lock", body: holder,
			want:      response{Status: http.StatusMethodNotAllowed, Body: "method not allowed\n"},
			wantAllow: "POST, DELETE, LOCK, UNLOCK",
		},
		"PATCH": {
			seed:   stored{State: state},
			method: http.MethodPatch, path: "/state/x", body: newState,
			want:       response{Status: http.StatusMethodNotAllowed, Body: "method not allowed\n"},
			wantRecord: stored{State: state},
			wantAllow:  "GET, POST, PUT, DELETE, LOCK, UNLOCK",
		},
		"HEAD": {
			method: http.MethodHead, path: "/state/x",
			want:      response{Status: http.StatusMethodNotAllowed},
			wantAllow: "GET, POST, PUT, DELETE, LOCK, UNLOCK",
		},
		"path outside /state/": {
			method: http.MethodGet, path: "/other/x",
			want: response{Status: http.StatusNotFound, Body: "404 page not found\n"},
		},
		"nested path": {
			method: http.MethodGet, path: "/state/x/y",
			want: response{Status: http.StatusNotFound, Body: "404 page not found\n"},
		},
		"trailing slash": {
			method: http.MethodGet, path: "/state/x/",
			want: response{Status: http.StatusNotFound, Body: "404 page not found\n"},
		},
		"empty name": {
			method: http.MethodGet, path: "/state/",
			want: response{Status: http.StatusBadRequest, Body: "invalid state name: empty\n"},
		},
		"dot-dot name": {
			method: http.MethodPost, path: "/state/..", body: state,
			want: response{Status: http.StatusBadRequest, Body: "invalid state name: \"..\"\n"},
		},
		"escaped dot-dot name": {
			method: http.MethodPost, path: "/state/%2E%2E", body: state,
			want: response{Status: http.StatusBadRequest, Body: "invalid state name: \"..\"\n"},
		},
		"escaped slash in the name": {
			method: http.MethodGet, path: "/state/a%2Fb",
			want: response{Status: http.StatusBadRequest, Body: "invalid state name: \"a/b\" contains a slash or a control character\n"},
		},
		"Content-MD5 matching": {
			method: http.MethodPost, path: "/state/x", body: state,
			header:     http.Header{"Content-Md5": {md5Header(state)}},
			want:       response{Status: http.StatusOK},
			wantRecord: stored{State: state},
		},
		"Content-MD5 mismatch": {
			method: http.MethodPost, path: "/state/x", body: state,
			header: http.Header{"Content-Md5": {md5Header(newState)}},
			want:   response{Status: http.StatusBadRequest, Body: "Content-MD5 does not match the body\n"},
		},
		"Content-MD5 malformed": {
			method: http.MethodPost, path: "/state/x", body: state,
			header: http.Header{"Content-Md5": {"not base64!"}},
			want:   response{Status: http.StatusBadRequest, Body: "malformed Content-MD5 header\n"},
		},
		"Content-MD5 mismatch on LOCK": {
			method: MethodLock, path: "/state/x", body: holder,
			header: http.Header{"Content-Md5": {md5Header(other)}},
			want:   response{Status: http.StatusBadRequest, Body: "Content-MD5 does not match the body\n"},
		},
		"Content-MD5 of an empty body on a forced UNLOCK": {
			seed:   stored{Lock: holder},
			method: MethodUnlock, path: "/state/x", body: []byte{},
			header: http.Header{"Content-Md5": {md5Header(nil)}},
			want:   response{Status: http.StatusOK, Body: string(holder)},
		},
		"names may hold dots, spaces and unicode": {
			method: http.MethodPost, path: "/state/team.a%20b-%C3%A9", body: state,
			want: response{Status: http.StatusOK},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := NewMemoryStore()
			put(t, store, "x", tc.seed)
			ts := startServer(t, New(store))

			got, header := send(t, ts.Client(), tc.method, ts.URL+tc.path, tc.body, tc.header)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if got := header.Get("Allow"); got != tc.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tc.wantAllow)
			}
			if diff := cmp.Diff(tc.wantRecord, load(t, store, "x")); diff != "" {
				t.Errorf("stored record (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGetHeaders(t *testing.T) {
	state := []byte(`{"version":4}`)
	store := NewMemoryStore()
	ts := startServer(t, New(store))
	send(t, ts.Client(), http.MethodPost, ts.URL+"/state/x", state, nil)

	_, header := send(t, ts.Client(), http.MethodGet, ts.URL+"/state/x", nil, nil)
	got := map[string]string{
		"Content-Type":   header.Get("Content-Type"),
		"Content-MD5":    header.Get("Content-MD5"),
		"Content-Length": header.Get("Content-Length"),
	}
	want := map[string]string{
		"Content-Type":   "application/json",
		"Content-MD5":    md5Header(state),
		"Content-Length": "13",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}
