package stateclient

import (
	stdcmp "cmp"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUpdate(t *testing.T) {
	t.Parallel()
	holder := `{"ID":"holder-id","Operation":"OperationTypeApply","Info":"","Who":"a@b","Version":"1.5.7","Created":"2026-01-02T03:04:05.123456789Z","Path":""}`
	cases := map[string]struct {
		handler  http.HandlerFunc
		method   string // UpdateMethod; empty: default POST
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
		"202 is an error": {handler: respond(202, ""), wantErr: "unexpected HTTP response (202 Accepted)", status: 202, attempts: 1},
		"404":             {handler: respond(404, ""), wantErr: "(404 Not Found)", status: 404, attempts: 1},
		"401":             {handler: respond(401, ""), wantErr: "requires auth", is: ErrUnauthorized, status: 401, attempts: 1},
		"403":             {handler: respond(403, ""), wantErr: "invalid auth", is: ErrForbidden, status: 403, attempts: 1},
		"409 locked":      {handler: respond(409, holder), wantErr: "state lock conflict (HTTP 409): held by ID=holder-id", holderID: "holder-id", attempts: 1},
		"423 locked":      {handler: respond(423, holder), wantErr: "state lock conflict (HTTP 423): held by ID=holder-id", holderID: "holder-id", attempts: 1},
		"500 then 200":    {handler: sequence(respond(500, ""), respond(200, "")), attempts: 2},
		"502 retried":     {handler: respond(502, ""), wantErr: "giving up after 3 attempt(s): last answer 502 Bad Gateway", status: 502, attempts: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tc.handler)
			cfg := fastConfig(srv.URL)
			cfg.UpdateMethod = tc.method
			err := mustNew(t, cfg).Update(ctxT(t), []byte(smallState))
			checkErr(t, err, tc.wantErr, tc.is)
			checkStatus(t, err, tc.status)
			checkHolder(t, err, tc.holderID)
			reqs := srv.requests()
			if len(reqs) != tc.attempts {
				t.Fatalf("server saw %d requests, want %d", len(reqs), tc.attempts)
			}
			want := request{
				Method: stdcmp.Or(tc.method, "POST"), Path: "/state", ContentType: "application/json",
				ContentMD5: base64.StdEncoding.EncodeToString(md5Of(smallState)), Body: smallState,
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

func TestUpdateEmptyBody(t *testing.T) {
	t.Parallel()
	srv := newServer(t, respond(200, ""))
	if err := mustNew(t, fastConfig(srv.URL)).Update(ctxT(t), nil); err != nil {
		t.Fatal(err)
	}
	r := srv.requests()[0]
	if r.Body != "" || r.ContentMD5 != "1B2M2Y8AsgTpgAmY7PhCfg==" || r.ContentType != "application/json" {
		t.Errorf("empty update sent %+v", r)
	}
}

// TestUpdateLockID checks the ID query parameter: present while the client
// holds a lock, merged into an existing query, gone after the unlock.
func TestUpdateLockID(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		query string // of the address
		want  url.Values
	}{
		"no query":       {want: url.Values{"ID": {"lock-1"}}},
		"existing query": {query: "?env=prod&x=1", want: url.Values{"ID": {"lock-1"}, "env": {"prod"}, "x": {"1"}}},
		"stale ID query": {query: "?ID=old", want: url.Values{"ID": {"lock-1"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, respond(200, ""))
			cfg := fastConfig(srv.URL)
			cfg.Address += tc.query
			c := mustNew(t, cfg)
			ctx := ctxT(t)
			info := NewLockInfo("OperationTypeApply", "test@host")
			info.ID = "lock-1"
			if _, err := c.Lock(ctx, info); err != nil {
				t.Fatal(err)
			}
			if err := c.Update(ctx, []byte("{}")); err != nil {
				t.Fatal(err)
			}
			if err := c.Unlock(ctx, "lock-1"); err != nil {
				t.Fatal(err)
			}
			if err := c.Update(ctx, []byte("{}")); err != nil {
				t.Fatal(err)
			}
			reqs := srv.requests()
			locked, _ := url.ParseQuery(reqs[1].Query)
			if diff := cmp.Diff(tc.want, locked); diff != "" {
				t.Errorf("query while locked mismatch (-want +got):\n%s", diff)
			}
			if got, want := reqs[3].Query, strings.TrimPrefix(tc.query, "?"); got != want {
				t.Errorf("query after unlock = %q, want the address's %q", got, want)
			}
		})
	}
}

func TestPurge(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		handler  http.HandlerFunc
		wantErr  string
		is       error
		status   int
		attempts int
	}{
		"200":          {handler: respond(200, ""), attempts: 1},
		"204 is error": {handler: respond(204, ""), wantErr: "DELETE URL/state: unexpected HTTP response (204 No Content)", status: 204, attempts: 1},
		"404 is error": {handler: respond(404, ""), wantErr: "(404 Not Found)", status: 404, attempts: 1},
		"401":          {handler: respond(401, ""), is: ErrUnauthorized, wantErr: "requires auth", status: 401, attempts: 1},
		"403":          {handler: respond(403, ""), is: ErrForbidden, wantErr: "invalid auth", status: 403, attempts: 1},
		"423":          {handler: respond(423, ""), wantErr: "(423 Locked)", status: 423, attempts: 1},
		"503 retried":  {handler: respond(503, ""), wantErr: "DELETE URL/state giving up after 3 attempt(s)", status: 503, attempts: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tc.handler)
			err := mustNew(t, fastConfig(srv.URL)).Purge(ctxT(t))
			checkErr(t, err, strings.ReplaceAll(tc.wantErr, "URL", srv.URL), tc.is)
			checkStatus(t, err, tc.status)
			reqs := srv.requests()
			if len(reqs) != tc.attempts {
				t.Fatalf("server saw %d requests, want %d", len(reqs), tc.attempts)
			}
			if r := reqs[0]; r.Method != http.MethodDelete || r.Body != "" || r.ContentMD5 != "" {
				t.Errorf("purge sent %+v", r)
			}
		})
	}
}
