package stateclient

import (
	"crypto/md5" // protocol checksum
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/infrastate/backend-operator/internal/statefile"
)

const smallState = `{"version":4,"terraform_version":"1.5.7","serial":3,"lineage":"lin","outputs":{"b":{"value":"x","type":"string","sensitive":true},"a":{"value":[1],"type":["list","number"]}},"resources":[]}`

func md5Of(s string) []byte {
	sum := md5.Sum([]byte(s))
	return sum[:]
}

// chunked streams body without Content-Length.
func chunked(state string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		body := state
		w.WriteHeader(http.StatusOK)
		for body != "" {
			n := min(len(body), 100)
			_, _ = w.Write([]byte(body[:n]))
			w.(http.Flusher).Flush()
			body = body[n:]
		}
	}
}

// TestStreamStateAnswers checks how a read of the state sorts the server's
// answers, retries included, through the whole body StreamState hands
// over.
func TestStreamStateAnswers(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		handler  http.HandlerFunc
		want     string // the body read; empty for no state
		wantErr  string
		is       error
		status   int // of a *StatusError in the chain, when set
		attempts int
	}{
		"200 with state":               {handler: respond(200, smallState), want: smallState, attempts: 1},
		"200 chunked":                  {handler: chunked(smallState), want: smallState, attempts: 1},
		"200 bad Content-MD5, ignored": {handler: respond(200, "{}", "Content-MD5", "%%%"), want: "{}", attempts: 1},
		"200 empty":                    {handler: respond(200, ""), attempts: 1},
		"204":                          {handler: respond(204, ""), attempts: 1},
		"404":                          {handler: respond(404, "not found"), attempts: 1},
		"401":                          {handler: respond(401, ""), wantErr: "GET " + "URL/state: HTTP remote state endpoint requires auth (401 Unauthorized)", is: ErrUnauthorized, status: 401, attempts: 1},
		"403":                          {handler: respond(403, ""), wantErr: "HTTP remote state endpoint invalid auth (403 Forbidden)", is: ErrForbidden, status: 403, attempts: 1},
		"400":                          {handler: respond(400, ""), wantErr: "unexpected HTTP response (400 Bad Request)", status: 400, attempts: 1},
		"409":                          {handler: respond(409, ""), wantErr: "unexpected HTTP response (409 Conflict)", status: 409, attempts: 1},
		"501 not retried":              {handler: respond(501, ""), wantErr: "(501 Not Implemented)", status: 501, attempts: 1},
		"500 retried":                  {handler: respond(500, ""), wantErr: "GET URL/state giving up after 3 attempt(s): last answer 500 Internal Server Error", status: 500, attempts: 3},
		"503 then 200":                 {handler: sequence(respond(503, ""), respond(200, smallState)), want: smallState, attempts: 2},
		"429 retried":                  {handler: respond(429, ""), wantErr: "giving up after 3 attempt(s)", status: 429, attempts: 3},
		"hang up retried":              {handler: hangUp, wantErr: "GET URL/state giving up after 3 attempt(s): Get \"URL/state\": EOF", attempts: 3},
		"hang up then 204":             {handler: sequence(hangUp, respond(204, "")), attempts: 2},
		"302 followed":                 {handler: sequence(respond(302, "", "Location", "/elsewhere"), respond(200, "{}")), want: "{}", attempts: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tc.handler)
			c := mustNew(t, fastConfig(srv.URL))
			got, err := fetchAll(ctxT(t), c)
			checkErr(t, err, strings.ReplaceAll(tc.wantErr, "URL", srv.URL), tc.is)
			checkStatus(t, err, tc.status)
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("StreamState() read (-want +got):\n%s", diff)
			}
			if n := len(srv.requests()); n != tc.attempts {
				t.Errorf("server saw %d requests, want %d", n, tc.attempts)
			}
			for _, r := range srv.requests() {
				if r.Auth != "" || r.ContentMD5 != "" || r.Body != "" {
					t.Errorf("GET carried auth, Content-MD5 or a body: %+v", r)
				}
			}
		})
	}
}

func checkErr(t *testing.T, err error, wantErr string, is error) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case wantErr != "" && err == nil:
		t.Fatalf("expected an error containing %q, got none", wantErr)
	case wantErr != "" && !strings.Contains(err.Error(), wantErr):
		t.Fatalf("error %q does not contain %q", err, wantErr)
	case is != nil && !errors.Is(err, is):
		t.Fatalf("error %q is not %v", err, is)
	}
}

// checkStatus checks the *StatusError in err's chain (status 0: none).
func checkStatus(t *testing.T, err error, status int) {
	t.Helper()
	var se *StatusError
	if got := errors.As(err, &se); got != (status != 0) {
		t.Fatalf("errors.As(%v, *StatusError) = %v, want %v", err, got, status != 0)
	}
	if se != nil && se.StatusCode != status {
		t.Errorf("StatusCode = %d, want %d", se.StatusCode, status)
	}
}

func TestFetchSummary(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		handler http.HandlerFunc
		want    *StateSummary
		wantErr string
		is      error
	}{
		"state": {handler: respond(200, smallState), want: &StateSummary{Present: true, SizeBytes: int64(len(smallState)), Summary: statefile.Summary{
			Serial: 3, Lineage: "lin", TerraformVersion: "1.5.7",
			OutputCount: 2,
		}}},
		"chunked":   {handler: chunked(smallState), want: &StateSummary{Present: true, SizeBytes: int64(len(smallState)), Summary: statefile.Summary{Serial: 3, Lineage: "lin", TerraformVersion: "1.5.7", OutputCount: 2}}},
		"empty 200": {handler: respond(200, ""), want: &StateSummary{}},
		"204":       {handler: respond(204, ""), want: &StateSummary{}},
		"404":       {handler: respond(404, ""), want: &StateSummary{}},
		"401":       {handler: respond(401, ""), wantErr: "requires auth", is: ErrUnauthorized},
		"403":       {handler: respond(403, ""), wantErr: "invalid auth", is: ErrForbidden},
		"malformed": {handler: respond(200, `{"version":4,`), wantErr: "invalid JSON"},
		"version 3": {handler: respond(200, `{"version":3}`), wantErr: "unsupported state format version 3", is: statefile.ErrUnsupportedVersion},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tc.handler)
			got, err := mustNew(t, fastConfig(srv.URL)).FetchSummary(ctxT(t), nil)
			checkErr(t, err, tc.wantErr, tc.is)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("FetchSummary() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSizeLimit(t *testing.T) {
	t.Parallel()
	const limit = 1000
	const prefix = `{"version":4,"serial":1,"x":"`
	exact := prefix + strings.Repeat("a", limit-len(prefix)-2) + `"}`
	over := prefix + strings.Repeat("a", limit-len(prefix)-1) + `"}`
	cases := map[string]struct {
		handler  http.HandlerFunc
		maxBytes int64
		wantErr  string // empty: the fetch succeeds
	}{
		"exact with length":       {handler: respond(200, exact), maxBytes: limit},
		"exact chunked":           {handler: chunked(exact), maxBytes: limit},
		"over with length":        {handler: respond(200, over), maxBytes: limit, wantErr: "state is larger than the 1000 bytes limit (Content-Length 1001)"},
		"over chunked":            {handler: chunked(over), maxBytes: limit, wantErr: "state is larger than the 1000 bytes limit"},
		"announced 64 MiB plus 1": {handler: respond(200, "", "Content-Length", strconv.Itoa(64<<20+1)), wantErr: "state is larger than the 64 MiB limit (Content-Length 67108865)"},
		"chunked 1 KiB limit":     {handler: chunked(over), maxBytes: 1 << 10},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tc.handler)
			cfg := fastConfig(srv.URL)
			cfg.MaxStateBytes = tc.maxBytes
			c := mustNew(t, cfg)
			data, err := fetchAll(ctxT(t), c)
			checkErr(t, err, tc.wantErr, nil)
			s, serr := c.FetchSummary(ctxT(t), nil)
			checkErr(t, serr, tc.wantErr, nil)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrStateTooLarge) || !errors.Is(serr, ErrStateTooLarge) {
					t.Errorf("errors %v, %v are not ErrStateTooLarge", err, serr)
				}
				return
			}
			if len(data) == 0 || !s.Present || s.SizeBytes != int64(len(data)) {
				t.Errorf("StreamState() read %d bytes, FetchSummary() = %+v", len(data), s)
			}
		})
	}
}

func TestStreamState(t *testing.T) {
	t.Parallel()
	boom := errors.New("the consumer stopped")
	cases := map[string]struct {
		handler   http.HandlerFunc
		maxBytes  int64
		read      func(io.Reader) error
		wantFound bool
		wantSize  int64
		wantRead  string // what read saw, when it reads everything
		wantErr   string
		is        error
	}{
		"state":          {handler: respond(200, smallState), wantFound: true, wantSize: int64(len(smallState)), wantRead: smallState},
		"chunked":        {handler: chunked(smallState), wantFound: true, wantSize: int64(len(smallState)), wantRead: smallState},
		"empty 200":      {handler: respond(200, "")},
		"404":            {handler: respond(404, "")},
		"403":            {handler: respond(403, ""), wantErr: "invalid auth", is: ErrForbidden},
		"too large":      {handler: chunked(smallState), maxBytes: 10, wantRead: smallState[:11], wantErr: "larger than the 10 bytes limit", is: ErrStateTooLarge},
		"consumer error": {handler: respond(200, smallState), read: func(io.Reader) error { return boom }, wantErr: "the consumer stopped", is: boom},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tc.handler)
			cfg := fastConfig(srv.URL)
			if tc.maxBytes > 0 {
				cfg.MaxStateBytes = tc.maxBytes
			}
			var seen []byte
			read := tc.read
			if read == nil {
				read = func(r io.Reader) error {
					var err error
					seen, err = io.ReadAll(r)
					return err
				}
			}
			found, size, err := mustNew(t, cfg).StreamState(ctxT(t), read)
			checkErr(t, err, tc.wantErr, tc.is)
			if found != tc.wantFound || size != tc.wantSize {
				t.Errorf("StreamState() = found %t, size %d; want %t, %d", found, size, tc.wantFound, tc.wantSize)
			}
			if string(seen) != tc.wantRead {
				t.Errorf("read saw %q, want %q", seen, tc.wantRead)
			}
		})
	}
}
