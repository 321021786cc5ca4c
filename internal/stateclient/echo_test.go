package stateclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"

	"github.com/infrastate/backend-operator/internal/statefile"
)

const (
	echoUser     = "alice"
	echoPassword = "echo-Pa55w0rd-secret"
	echoToken    = "echo-t0ken/secret+value"
	echoURLPass  = "echo-url-pass-secret"
)

// echoOf describes everything a request carried: method, full URL with
// its query, every header (Authorization included) and the body.
func echoOf(r *http.Request, body string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s://%s%s\n", r.Method, "http", r.Host, r.URL.RequestURI())
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(r.Header[k], ", "))
	}
	if user, pass, ok := r.BasicAuth(); ok {
		fmt.Fprintf(&b, "decoded: %s:%s %s\n", user, pass, pass)
	}
	for _, vs := range r.URL.Query() {
		fmt.Fprintf(&b, "query value: %s\n", strings.Join(vs, ","))
	}
	b.WriteString(body)
	return b.String()
}

// echoHandler is a hostile server: it answers with what it received. The
// last path element picks the answer: GET 500, GET text (200, not JSON,
// a Content-MD5 holding the Authorization, which reads ignore), GET away
// (302 to another host); LOCK and UNLOCK answer 423 and 409 with the echo
// in the holder's Who and Info, or (path element text) a non-JSON body.
func echoHandler(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	echo := echoOf(r, string(body))
	w.Header().Set("X-Echo", strings.ReplaceAll(echo, "\n", " | "))
	mode := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	switch {
	case r.Method == http.MethodGet && mode == "500":
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = fmt.Fprint(w, echo)
	case r.Method == http.MethodGet && mode == "text":
		w.Header().Set("Content-MD5", "!"+r.Header.Get("Authorization"))
		_, _ = fmt.Fprint(w, echo)
	case r.Method == http.MethodGet && mode == "away":
		w.Header().Set("Location", "http://127.0.0.2:1/"+url.PathEscape(echo)+"?"+r.URL.RawQuery+"&auth="+url.QueryEscape(r.Header.Get("Authorization")))
		w.WriteHeader(http.StatusFound)
	case mode == "text":
		w.WriteHeader(http.StatusLocked)
		_, _ = fmt.Fprint(w, echo)
	default:
		_, pass, _ := r.BasicAuth()
		status := http.StatusLocked
		if r.Method != "LOCK" {
			status = http.StatusConflict
		}
		holder, err := json.Marshal(LockInfo{
			ID: "holder-" + r.URL.Query().Get("token"), Operation: r.Header.Get("Authorization"),
			Info: echo, Who: echo, Version: pass + " " + r.URL.RawQuery, Path: r.URL.String(),
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write(holder)
	}
}

// TestEchoServerLeaksNothing drives every read and lock call against a
// server that echoes the credentials it received into its answers, and
// checks that no returned error, no LockInfo and no log line (at the
// highest verbosity) holds the password, the query token or the basic
// auth value.
func TestEchoServerLeaksNothing(t *testing.T) {
	t.Parallel()
	srv := newServer(t, echoHandler)
	ctx := ctxT(t)
	var logs syncBuffer
	logger := funcr.New(logs.write, funcr.Options{Verbosity: 10})

	basicHeader := basic(echoUser, echoPassword)
	urlBasic := basic("carol", echoURLPass)
	secrets := map[string]string{
		"password":              echoPassword,
		"user:password":         echoUser + ":" + echoPassword,
		"basic auth value":      strings.TrimPrefix(basicHeader, "Basic "),
		"token":                 echoToken,
		"token, query-escaped":  url.QueryEscape(echoToken),
		"URL password":          echoURLPass,
		"URL basic auth value":  strings.TrimPrefix(urlBasic, "Basic "),
		"URL password, escaped": url.QueryEscape(echoURLPass),
	}

	var (
		errs  []error
		infos []*LockInfo
	)
	record := func(what string, err error) {
		if err == nil {
			t.Errorf("%s: expected an error from the echo server", what)
			return
		}
		errs = append(errs, err)
		var le *LockError
		if errors.As(err, &le) && le.Info != nil {
			infos = append(infos, le.Info)
		}
	}
	query := "?token=" + url.QueryEscape(echoToken) + "&env=prod"
	clients := map[string]Config{}
	for _, mode := range []string{"500", "text", "away"} {
		cfg := fastConfig(srv.URL)
		cfg.Address = srv.URL + "/state/" + mode + query
		cfg.LockAddress = srv.URL + "/lock/" + mode + query
		cfg.UnlockAddress = cfg.LockAddress
		cfg.Username, cfg.Password = echoUser, echoPassword
		clients["basic auth, "+mode] = cfg
		withUserinfo := cfg
		withUserinfo.Username, withUserinfo.Password = "", ""
		for _, a := range []*string{&withUserinfo.Address, &withUserinfo.LockAddress, &withUserinfo.UnlockAddress} {
			*a = strings.Replace(*a, "http://", "http://carol:"+url.QueryEscape(echoURLPass)+"@", 1)
		}
		clients["userinfo, "+mode] = withUserinfo
	}
	for name, cfg := range clients {
		c := mustNew(t, cfg, WithLogger(logger))
		_, _, err := c.StreamState(ctx, func(r io.Reader) error { // as a RemoteState reads
			_, err := statefile.ReadOutputs(r, statefile.Options{})
			return err
		})
		record(name+": StreamState", err)
		_, err = c.FetchSummary(ctx, nil)
		record(name+": FetchSummary", err)
		_, err = c.Lock(ctx, NewLockInfo("OperationTypeApply", "operator@cluster"))
		record(name+": Lock", err)
		record(name+": Unlock", c.Unlock(ctx, "some-id"))
		record(name+": ForceUnlock", c.ForceUnlock(ctx, "some-id"))
	}

	// The server did receive the secrets, and echoed them.
	if got := srv.requests(); len(got) == 0 || !strings.Contains(got[0].Auth+got[len(got)-1].Auth, "Basic ") {
		t.Fatalf("the echo server saw no credentials: %d requests", len(got))
	}
	if len(infos) == 0 {
		t.Fatal("no LockError carried the echoed holder")
	}
	for _, info := range infos {
		if !strings.Contains(info.Info, "[redacted]") || !strings.Contains(info.Who, "[redacted]") {
			t.Errorf("the holder's Who and Info do not show a redaction: %q, %q", info.Who, info.Info)
		}
	}
	out := logs.String()
	if !strings.Contains(out, "Performing request") {
		t.Errorf("the logger saw no request; logs:\n%s", out)
	}
	for what, secret := range secrets {
		for _, err := range errs {
			for _, text := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
				if strings.Contains(text, secret) {
					t.Errorf("an error holds the %s: %s", what, text)
				}
			}
		}
		for _, info := range infos {
			if text := fmt.Sprintf("%#v", *info); strings.Contains(text, secret) {
				t.Errorf("a LockInfo holds the %s: %s", what, text)
			}
		}
		if strings.Contains(out, secret) {
			t.Errorf("the logs hold the %s", what)
		}
	}
}
