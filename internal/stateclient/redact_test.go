package stateclient

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
)

const querySecret = "QUERYSECRET-tok3n"

// TestAddressQueryNeverPrinted checks that URLs are printed as
// scheme://host/path only: no query value (which may hold a token) and no
// fragment in any error, its fields, the transport error inside it, the
// logs, Config.String or Client.String.
func TestAddressQueryNeverPrinted(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/401"):
			w.WriteHeader(http.StatusUnauthorized)
		case strings.HasPrefix(r.URL.Path, "/500"):
			w.WriteHeader(http.StatusInternalServerError)
		case strings.HasPrefix(r.URL.Path, "/423"):
			w.WriteHeader(http.StatusLocked)
		default:
			hangUp(w, r)
		}
	})
	var logs syncBuffer
	logger := funcr.New(logs.write, funcr.Options{Verbosity: 10})
	ctx := ctxT(t)
	var errs []error
	for _, path := range []string{"/401", "/500", "/423", "/hangup"} {
		addr := srv.URL + path + "?token=" + querySecret + "&x=1#frag-" + querySecret
		cfg := fastConfig(addr)
		cfg.Address, cfg.LockAddress, cfg.UnlockAddress = addr, addr, addr
		c := mustNew(t, cfg, WithLogger(logger))
		for _, s := range []string{cfg.String(), c.String(), fmt.Sprintf("%+v", c)} {
			if strings.Contains(s, querySecret) {
				t.Errorf("printing the config or client shows the query: %s", s)
			}
		}
		if want := srv.URL + path; c.String() != "stateclient.Client{"+want+"}" {
			t.Errorf("Client.String() = %s, want the URL %s", c.String(), want)
		}
		_, fetchErr := fetchAll(ctx, c)
		updateErr := c.Update(ctx, []byte("{}"))
		_, lockErr := c.Lock(ctx, NewLockInfo("OperationTypeApply", "me"))
		errs = append(errs, fetchErr, updateErr, lockErr, c.ForceUnlock(ctx, "x"))
	}
	for _, err := range errs {
		if err == nil {
			t.Error("expected an error")
			continue
		}
		if strings.Contains(err.Error(), querySecret) || strings.Contains(err.Error(), "frag-") {
			t.Errorf("error shows the query or fragment: %v", err)
		}
		var (
			se *StatusError
			re *RetryError
			ue *url.Error
		)
		for _, u := range []string{fieldIf(errors.As(err, &se), func() string { return se.URL }), fieldIf(errors.As(err, &re), func() string { return re.URL }), fieldIf(errors.As(err, &ue), func() string { return ue.URL })} {
			if strings.ContainsAny(u, "?#") {
				t.Errorf("an error field holds the URL %q with its query", u)
			}
		}
	}
	if out := logs.String(); out == "" || strings.Contains(out, querySecret) {
		t.Errorf("the logs are empty or show the query:\n%s", out)
	}
}

func fieldIf(ok bool, f func() string) string {
	if !ok {
		return ""
	}
	return f()
}

// rawServer serves one fixed raw HTTP answer on every connection.
func rawServer(t *testing.T, answer string) string {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for { // read the request head
					line, err := r.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				_, _ = c.Write([]byte(answer))
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestNoResponseBytesInErrors checks that errors say what was wrong with
// an answer without echoing what the server sent.
func TestNoResponseBytesInErrors(t *testing.T) {
	t.Parallel()
	const marker = "SERVERBYTES"
	fetch := func(ctx context.Context, c *Client) error { _, err := fetchAll(ctx, c); return err }
	summary := func(ctx context.Context, c *Client) error { _, err := c.FetchSummary(ctx, nil); return err }
	lock := func(ctx context.Context, c *Client) error {
		_, err := c.Lock(ctx, NewLockInfo("OperationTypeApply", "me"))
		return err
	}
	cases := map[string]struct {
		handler http.HandlerFunc // nil: raw
		raw     string           // a raw answer
		call    func(context.Context, *Client) error
		wantErr string
	}{
		"state not JSON":          {handler: respond(200, `{"version":4,"x":`+marker+`}`), call: summary, wantErr: "invalid JSON"},
		"lock holder not JSON":    {handler: respond(423, "locked by "+marker), call: lock, wantErr: "not valid LockInfo JSON"},
		"lock holder bad Created": {handler: respond(409, `{"ID":"x","Created":"`+marker+`"}`), call: lock, wantErr: "not valid LockInfo JSON"},
		"lock holder bad type":    {handler: respond(409, `{"ID":1`+strings.Repeat("7", 20)+`}`), call: lock, wantErr: "not valid LockInfo JSON"},
		"unparsable Location":     {handler: respond(302, "", "Location", "http://["+marker), call: fetch, wantErr: "failed to parse Location header"},
		"refused redirect":        {handler: respond(302, "", "Location", "http://127.0.0.2:1/"+marker+"?q="+marker), call: fetch, wantErr: "redirect refused"},
		"redirected, then 418": {handler: func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/state" {
				respond(302, "", "Location", "/"+marker+"?q="+marker)(w, r)
				return
			}
			w.WriteHeader(http.StatusTeapot)
		}, call: fetch, wantErr: "418"},
		"malformed status line": {raw: "HTTP/1.1 " + marker + "\r\n\r\n", call: fetch, wantErr: "malformed HTTP status code"},
		"malformed response":    {raw: marker + "\r\n\r\n", call: fetch, wantErr: "malformed HTTP response"},
		"malformed header line": {raw: "HTTP/1.1 200 OK\r\n" + marker + "\r\n\r\n", call: fetch, wantErr: "malformed MIME header"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var addr string
			if tc.handler != nil {
				addr = newServer(t, tc.handler).URL
			} else {
				addr = rawServer(t, tc.raw)
			}
			err := tc.call(ctxT(t), mustNew(t, fastConfig(addr)))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), strings.ToLower(marker)) || strings.Contains(err.Error(), marker) || strings.Contains(err.Error(), "77777") {
				t.Errorf("error echoes the answer: %v", err)
			}
		})
	}
}

// TestSecretScrubbing checks the replacement of the client's own secrets
// in text: long ones anywhere, short ones where they stand alone.
func TestSecretScrubbing(t *testing.T) {
	t.Parallel()
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	long := Config{
		Address: "http://h/s?token=" + url.QueryEscape("tok/en+long-1") + "&x=1", Username: "alice", Password: "hunter2-long-secret",
		LockAddress: "http://carol:url-pass-long@h/l",
	}
	short := Config{Address: "http://h/s?k=v1", Username: "bob", Password: "abc"}
	cases := map[string]struct {
		cfg  Config
		in   string
		want string
	}{
		"password":                {cfg: long, in: "who=hunter2-long-secret@x", want: "who=[redacted]@x"},
		"user and password":       {cfg: long, in: "alice:hunter2-long-secret", want: "[redacted]"},
		"basic auth header":       {cfg: long, in: "Authorization: Basic " + b64("alice:hunter2-long-secret"), want: "Authorization: Basic [redacted]"},
		"userinfo basic auth":     {cfg: long, in: "Basic " + b64("carol:url-pass-long"), want: "Basic [redacted]"},
		"userinfo password":       {cfg: long, in: "p=url-pass-long", want: "p=[redacted]"},
		"query value":             {cfg: long, in: "got tok/en+long-1", want: "got [redacted]"},
		"query value, escaped":    {cfg: long, in: "/s?token=tok%2Fen%2Blong-1&x=1", want: "/s?token=[redacted]&x=[redacted]"},
		"password, Go-quoted":     {cfg: Config{Address: "http://h/", Username: "u", Password: `pa"ss-long-one`}, in: `x "pa\"ss-long-one"`, want: `x "[redacted]"`},
		"short password alone":    {cfg: short, in: "abc@host (abc)", want: "[redacted]@host ([redacted])"},
		"short password in words": {cfg: short, in: "xabcx abcd", want: "xabcx abcd"},
		"short query value":       {cfg: short, in: "HTTP 4v1 v1", want: "HTTP 4v1 [redacted]"},
		"nothing to hide":         {cfg: Config{Address: "http://h/s"}, in: "plain text", want: "plain text"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, newSecrets(tc.cfg).scrub(tc.in)); diff != "" {
				t.Errorf("scrub(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestSecretsHoldEachValueOnce checks that a value given several times
// (the same password in the address, the lock address and the unlock
// address, say) is scrubbed in one pass, not once per copy.
func TestSecretsHoldEachValueOnce(t *testing.T) {
	cfg := Config{
		Address:       "http://u:pw-one@h/s?a=v1&b=v2&c=v3&d=v4",
		LockAddress:   "http://u:pw-one@h/l?a=v1&b=v2&c=v3&d=v4",
		UnlockAddress: "http://u:pw-one@h/u?a=v1&b=v2&c=v3&d=v4",
		Username:      "u",
		Password:      "pw-one",
	}
	values := newSecrets(cfg).values()
	seen := map[string]bool{}
	for _, v := range values {
		if seen[v] {
			t.Errorf("%q is held more than once in %q", v, values)
		}
		seen[v] = true
	}
}
