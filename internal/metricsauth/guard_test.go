package metricsauth

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// scraperUser is the user of "scraper-token", which may get /metrics;
// deniedScraper the answer to its other requests.
const (
	scraperUser   = "system:serviceaccount:monitoring:prometheus"
	deniedScraper = "Authorization denied for user " + scraperUser
)

// fakeReviewer answers reviews from its tables and records them.
type fakeReviewer struct {
	mu                      sync.Mutex
	users                   map[string]authenticationv1.UserInfo // token -> user; absent: not authenticated
	allow                   map[string]bool                      // "user verb path" -> allowed
	deny                    map[string]bool                      // "user verb path" -> denied too, by another authorizer
	tokenErrs, accessErrs   []error                              // returned, in order, before the tables answer
	tokenCalls, accessCalls int
	lastSpec                authorizationv1.SubjectAccessReviewSpec
}

func (f *fakeReviewer) ReviewToken(_ context.Context, token string) (authenticationv1.TokenReviewStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokenCalls++
	if len(f.tokenErrs) > 0 {
		err := f.tokenErrs[0]
		f.tokenErrs = f.tokenErrs[1:]
		return authenticationv1.TokenReviewStatus{}, err
	}
	user, ok := f.users[token]
	if !ok {
		return authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}, nil
	}
	return authenticationv1.TokenReviewStatus{Authenticated: true, User: user}, nil
}

func (f *fakeReviewer) ReviewAccess(_ context.Context, spec authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.accessCalls++
	f.lastSpec = spec
	if len(f.accessErrs) > 0 {
		err := f.accessErrs[0]
		f.accessErrs = f.accessErrs[1:]
		return authorizationv1.SubjectAccessReviewStatus{}, err
	}
	request := spec.User + " " + spec.NonResourceAttributes.Verb + " " + spec.NonResourceAttributes.Path
	if f.allow[request] {
		return authorizationv1.SubjectAccessReviewStatus{Allowed: true, Denied: f.deny[request]}, nil
	}
	return authorizationv1.SubjectAccessReviewStatus{Reason: "no RBAC policy matched"}, nil
}

func (f *fakeReviewer) calls() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenCalls, f.accessCalls
}

func newFakeReviewer() *fakeReviewer {
	return &fakeReviewer{
		users: map[string]authenticationv1.UserInfo{
			"scraper-token":  {Username: scraperUser, UID: "u1", Groups: []string{"system:serviceaccounts"}},
			"stranger-token": {Username: "system:serviceaccount:apps:stranger", UID: "u2"},
		},
		allow: map[string]bool{scraperUser + " get /metrics": true},
	}
}

// noWait retries at once, as often as the real backoff does.
var noWait = wait.Backoff{Duration: time.Nanosecond, Factor: 1, Steps: retryBackoff.Steps}

// serve sends one request through a Guard around a handler that reports
// the Authorization header it saw.
func serve(t *testing.T, guard *Guard, method, path, authorization string) (int, string) {
	t.Helper()
	next := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = w.Write([]byte("served, Authorization=" + req.Header.Get("Authorization")))
	})
	req := httptest.NewRequestWithContext(t.Context(), method, path, http.NoBody)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	guard.Wrap(logr.Discard(), next).ServeHTTP(rec, req)
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

func TestGuardAnswers(t *testing.T) {
	transient := apierrors.NewInternalError(errors.New("etcd leader changed"))
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}, "", errors.New("RBAC"))
	cases := map[string]struct {
		method, path, authorization string
		tokenErrs, accessErrs       []error
		wantCode                    int
		wantBody                    string
		wantTokenCalls, wantAccess  int
	}{
		"no token": {
			method: http.MethodGet, path: "/metrics",
			wantCode: http.StatusUnauthorized, wantBody: "Unauthorized",
		},
		"a scheme other than Bearer": {
			method: http.MethodGet, path: "/metrics", authorization: "Basic c2NyYXBlcjpwdw==",
			wantCode: http.StatusUnauthorized, wantBody: "Unauthorized",
		},
		"an empty bearer token": {
			method: http.MethodGet, path: "/metrics", authorization: "Bearer ",
			wantCode: http.StatusUnauthorized, wantBody: "Unauthorized",
		},
		"a token the API server does not authenticate": {
			method: http.MethodGet, path: "/metrics", authorization: "Bearer forged",
			wantCode: http.StatusUnauthorized, wantBody: "Unauthorized", wantTokenCalls: 1,
		},
		"a user who may not get /metrics": {
			method: http.MethodGet, path: "/metrics", authorization: "Bearer stranger-token",
			wantCode: http.StatusForbidden, wantBody: "Authorization denied for user system:serviceaccount:apps:stranger",
			wantTokenCalls: 1, wantAccess: 1,
		},
		"the metrics reader": {
			method: http.MethodGet, path: "/metrics", authorization: "Bearer scraper-token",
			wantCode: http.StatusOK, wantBody: "served, Authorization=", wantTokenCalls: 1, wantAccess: 1,
		},
		"the scheme's case is ignored": {
			method: http.MethodGet, path: "/metrics", authorization: "bearer scraper-token",
			wantCode: http.StatusOK, wantBody: "served, Authorization=", wantTokenCalls: 1, wantAccess: 1,
		},
		"the metrics reader posting": {
			method: http.MethodPost, path: "/metrics", authorization: "Bearer scraper-token",
			wantCode: http.StatusForbidden, wantBody: deniedScraper,
			wantTokenCalls: 1, wantAccess: 1,
		},
		"the metrics reader on another path": {
			method: http.MethodGet, path: "/debug/pprof/", authorization: "Bearer scraper-token",
			wantCode: http.StatusForbidden, wantBody: deniedScraper,
			wantTokenCalls: 1, wantAccess: 1,
		},
		"a request both allowed and denied by the authorizers": {
			method: http.MethodGet, path: "/metrics/denied", authorization: "Bearer scraper-token",
			wantCode: http.StatusForbidden, wantBody: deniedScraper,
			wantTokenCalls: 1, wantAccess: 1,
		},
		"a TokenReview that fails, then succeeds": {
			method: http.MethodGet, path: "/metrics", authorization: "Bearer scraper-token",
			tokenErrs: []error{transient, transient},
			wantCode:  http.StatusOK, wantBody: "served, Authorization=", wantTokenCalls: 3, wantAccess: 1,
		},
		"a TokenReview that always fails": {
			method: http.MethodGet, path: "/metrics", authorization: "Bearer scraper-token",
			tokenErrs: []error{transient, transient, transient, transient, transient, transient},
			wantCode:  http.StatusInternalServerError, wantBody: "Authentication failed", wantTokenCalls: retryBackoff.Steps,
		},
		"a TokenReview refused is not retried": {
			method: http.MethodGet, path: "/metrics", authorization: "Bearer scraper-token",
			tokenErrs: []error{forbidden},
			wantCode:  http.StatusInternalServerError, wantBody: "Authentication failed", wantTokenCalls: 1,
		},
		"a SubjectAccessReview that fails, then succeeds": {
			method: http.MethodGet, path: "/metrics", authorization: "Bearer scraper-token",
			accessErrs: []error{apierrors.NewTooManyRequests("slow down", 1)},
			wantCode:   http.StatusOK, wantBody: "served, Authorization=", wantTokenCalls: 1, wantAccess: 2,
		},
		"a SubjectAccessReview that fails": {
			method: http.MethodGet, path: "/metrics", authorization: "Bearer scraper-token",
			accessErrs: []error{forbidden},
			wantCode:   http.StatusInternalServerError, wantBody: "Authorization failed for user " + scraperUser,
			wantTokenCalls: 1, wantAccess: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reviewer := newFakeReviewer()
			reviewer.deny = map[string]bool{scraperUser + " get /metrics/denied": true}
			reviewer.allow[scraperUser+" get /metrics/denied"] = true
			reviewer.tokenErrs, reviewer.accessErrs = tc.tokenErrs, tc.accessErrs
			code, body := serve(t, NewGuard(reviewer, WithBackoff(noWait)), tc.method, tc.path, tc.authorization)
			if code != tc.wantCode || body != tc.wantBody {
				t.Errorf("got %d %q, want %d %q", code, body, tc.wantCode, tc.wantBody)
			}
			tokenCalls, accessCalls := reviewer.calls()
			if tokenCalls != tc.wantTokenCalls || accessCalls != tc.wantAccess {
				t.Errorf("reviews: %d TokenReviews, %d SubjectAccessReviews; want %d, %d", tokenCalls, accessCalls, tc.wantTokenCalls, tc.wantAccess)
			}
		})
	}
}

func TestGuardAsksForTheUsersAccess(t *testing.T) {
	reviewer := newFakeReviewer()
	reviewer.users["scraper-token"] = authenticationv1.UserInfo{
		Username: scraperUser, UID: "u1", Groups: []string{"system:serviceaccounts", "system:authenticated"},
		Extra: map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}},
	}
	if code, _ := serve(t, NewGuard(reviewer), http.MethodGet, "/metrics", "Bearer scraper-token"); code != http.StatusOK {
		t.Fatalf("got %d, want 200", code)
	}
	want := authorizationv1.SubjectAccessReviewSpec{
		User: scraperUser, UID: "u1", Groups: []string{"system:serviceaccounts", "system:authenticated"},
		Extra:                 map[string]authorizationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
	}
	if diff := cmp.Diff(want, reviewer.lastSpec); diff != "" {
		t.Errorf("SubjectAccessReview spec (-want +got):\n%s", diff)
	}
}

func TestGuardReusesReviewsUntilTheyExpire(t *testing.T) {
	type request struct {
		after         time.Duration // since the previous request
		authorization string
		wantCode      int
		wantToken     int // TokenReviews made so far
		wantAccess    int // SubjectAccessReviews made so far
	}
	cases := map[string][]request{
		"an allowed scraper: the token for a minute, the access for five": {
			{0, "Bearer scraper-token", http.StatusOK, 1, 1},
			{30 * time.Second, "Bearer scraper-token", http.StatusOK, 1, 1},
			{30 * time.Second, "Bearer scraper-token", http.StatusOK, 2, 1},
			{4*time.Minute - time.Second, "Bearer scraper-token", http.StatusOK, 3, 1},
			{time.Second, "Bearer scraper-token", http.StatusOK, 3, 2},
		},
		"a denied user: the denial for 30 seconds": {
			{0, "Bearer stranger-token", http.StatusForbidden, 1, 1},
			{29 * time.Second, "Bearer stranger-token", http.StatusForbidden, 1, 1},
			{time.Second, "Bearer stranger-token", http.StatusForbidden, 1, 2},
		},
		"a token not authenticated: for 30 seconds": {
			{0, "Bearer forged", http.StatusUnauthorized, 1, 0},
			{29 * time.Second, "Bearer forged", http.StatusUnauthorized, 1, 0},
			{time.Second, "Bearer forged", http.StatusUnauthorized, 2, 0},
		},
		"each token is reviewed on its own": {
			{0, "Bearer scraper-token", http.StatusOK, 1, 1},
			{0, "Bearer stranger-token", http.StatusForbidden, 2, 2},
			{0, "Bearer forged", http.StatusUnauthorized, 3, 2},
			{0, "Bearer scraper-token", http.StatusOK, 3, 2},
		},
	}
	for name, requests := range cases {
		t.Run(name, func(t *testing.T) {
			now := time.Date(2026, 12, 6, 11, 0, 0, 0, time.UTC)
			reviewer := newFakeReviewer()
			guard := NewGuard(reviewer, WithClock(func() time.Time { return now }))
			for i, r := range requests {
				now = now.Add(r.after)
				code, _ := serve(t, guard, http.MethodGet, "/metrics", r.authorization)
				tokenCalls, accessCalls := reviewer.calls()
				if code != r.wantCode || tokenCalls != r.wantToken || accessCalls != r.wantAccess {
					t.Errorf("request %d: got %d after %d TokenReviews and %d SubjectAccessReviews; want %d after %d and %d",
						i, code, tokenCalls, accessCalls, r.wantCode, r.wantToken, r.wantAccess)
				}
			}
		})
	}
}

func TestGuardDoesNotCacheFailedReviews(t *testing.T) {
	reviewer := newFakeReviewer()
	transient := apierrors.NewInternalError(errors.New("etcd leader changed"))
	reviewer.tokenErrs = []error{transient, transient, transient, transient, transient}
	guard := NewGuard(reviewer, WithBackoff(noWait))
	if code, _ := serve(t, guard, http.MethodGet, "/metrics", "Bearer scraper-token"); code != http.StatusInternalServerError {
		t.Fatalf("while the API server is down: got %d, want 500", code)
	}
	if code, _ := serve(t, guard, http.MethodGet, "/metrics", "Bearer scraper-token"); code != http.StatusOK {
		t.Errorf("once it is back: got %d, want 200", code)
	}
}

func TestBearerToken(t *testing.T) {
	cases := map[string]struct {
		header    string
		wantToken string
		wantOK    bool
	}{
		"none":                  {header: "", wantOK: false},
		"bearer":                {header: "Bearer abc.def", wantToken: "abc.def", wantOK: true},
		"lower case scheme":     {header: "bearer abc", wantToken: "abc", wantOK: true},
		"upper case scheme":     {header: "BEARER abc", wantToken: "abc", wantOK: true},
		"surrounding space":     {header: "  Bearer abc  ", wantToken: "abc", wantOK: true},
		"scheme only":           {header: "Bearer", wantOK: false},
		"empty token":           {header: "Bearer  abc", wantOK: false},
		"basic":                 {header: "Basic YTpi", wantOK: false},
		"text after the token":  {header: "Bearer abc def", wantToken: "abc", wantOK: true},
		"scheme as a substring": {header: "Bearerabc", wantOK: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			token, ok := bearerToken(tc.header)
			if token != tc.wantToken || ok != tc.wantOK {
				t.Errorf("bearerToken(%q) = %q, %v; want %q, %v", tc.header, token, ok, tc.wantToken, tc.wantOK)
			}
		})
	}
}

func TestAccessKeyTellsSpecsApart(t *testing.T) {
	base := func() authorizationv1.SubjectAccessReviewSpec {
		return accessSpec(authenticationv1.UserInfo{Username: "u", UID: "1", Groups: []string{"a", "b"},
			Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}, "get", "/metrics")
	}
	variants := map[string]func(*authorizationv1.SubjectAccessReviewSpec){
		"user":          func(s *authorizationv1.SubjectAccessReviewSpec) { s.User = "v" },
		"uid":           func(s *authorizationv1.SubjectAccessReviewSpec) { s.UID = "2" },
		"groups joined": func(s *authorizationv1.SubjectAccessReviewSpec) { s.Groups = []string{"ab"} },
		"groups split":  func(s *authorizationv1.SubjectAccessReviewSpec) { s.Groups = []string{"a", "b", ""} },
		"user into uid": func(s *authorizationv1.SubjectAccessReviewSpec) { s.User, s.UID = "", "u1" },
		"extra value":   func(s *authorizationv1.SubjectAccessReviewSpec) { s.Extra["k"] = authorizationv1.ExtraValue{"w"} },
		"extra key": func(s *authorizationv1.SubjectAccessReviewSpec) {
			s.Extra = map[string]authorizationv1.ExtraValue{"kv": nil}
		},
		"no extra": func(s *authorizationv1.SubjectAccessReviewSpec) { s.Extra = nil },
		"verb":     func(s *authorizationv1.SubjectAccessReviewSpec) { s.NonResourceAttributes.Verb = "post" },
		"path":     func(s *authorizationv1.SubjectAccessReviewSpec) { s.NonResourceAttributes.Path = "/metricsget" },
		"path and verb swap": func(s *authorizationv1.SubjectAccessReviewSpec) {
			s.NonResourceAttributes.Path, s.NonResourceAttributes.Verb = "get", "/metrics"
		},
	}
	seen := map[[32]byte]string{accessKey(base()): "base"}
	for name, change := range variants {
		spec := base()
		change(&spec)
		key := accessKey(spec)
		if other, ok := seen[key]; ok {
			t.Errorf("%s has the key of %s", name, other)
		}
		seen[key] = name
	}
	again := base()
	if accessKey(again) != accessKey(base()) {
		t.Error("the same spec gives two keys")
	}
}

func TestGuardReviewsEachRequestOfAUserOnItsOwn(t *testing.T) {
	reviewer := newFakeReviewer()
	guard := NewGuard(reviewer)
	requests := []struct {
		method, path string
		wantCode     int
		wantAccess   int
	}{
		{http.MethodGet, "/metrics", http.StatusOK, 1},
		{http.MethodPost, "/metrics", http.StatusForbidden, 2},
		{http.MethodGet, "/debug/pprof/", http.StatusForbidden, 3},
		{http.MethodHead, "/metrics", http.StatusForbidden, 4},
		{http.MethodGet, "/metrics", http.StatusOK, 4},
		{http.MethodPost, "/metrics", http.StatusForbidden, 4},
	}
	for i, r := range requests {
		code, _ := serve(t, guard, r.method, r.path, "Bearer scraper-token")
		if _, accessCalls := reviewer.calls(); code != r.wantCode || accessCalls != r.wantAccess {
			t.Errorf("request %d, %s %s: got %d after %d SubjectAccessReviews; want %d after %d",
				i, r.method, r.path, code, accessCalls, r.wantCode, r.wantAccess)
		}
	}
}

// hangingReviewer answers no review until its context ends.
type hangingReviewer struct{}

func (hangingReviewer) ReviewToken(ctx context.Context, _ string) (authenticationv1.TokenReviewStatus, error) {
	<-ctx.Done()
	return authenticationv1.TokenReviewStatus{}, ctx.Err()
}

func (hangingReviewer) ReviewAccess(ctx context.Context, _ authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
	<-ctx.Done()
	return authorizationv1.SubjectAccessReviewStatus{}, ctx.Err()
}

func TestGuardGivesUpAtTheReviewTimeout(t *testing.T) {
	done := make(chan int, 1)
	go func() {
		code, _ := serve(t, NewGuard(hangingReviewer{}, WithReviewTimeout(50*time.Millisecond)), http.MethodGet, "/metrics", "Bearer scraper-token")
		done <- code
	}()
	select {
	case code := <-done:
		if code != http.StatusInternalServerError {
			t.Errorf("got %d, want 500", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("the request still waits for its review a minute later")
	}
}

func TestAccessKeyIgnoresTheOrderOfExtra(t *testing.T) {
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var first [32]byte
	for i := range 20 {
		extra := map[string]authenticationv1.ExtraValue{}
		for j := range keys {
			k := keys[(i+j)%len(keys)]
			extra[k] = authenticationv1.ExtraValue{"v-" + k}
		}
		key := accessKey(accessSpec(authenticationv1.UserInfo{Username: "u", Extra: extra}, "get", "/metrics"))
		if i == 0 {
			first = key
		} else if key != first {
			t.Fatalf("the same extra, inserted in another order (%d), gives another key", i)
		}
	}
}

func TestRetriable(t *testing.T) {
	gr := schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}
	cases := map[string]struct {
		err  error
		want bool
	}{
		"500":                                  {err: apierrors.NewInternalError(errors.New("boom")), want: true},
		"504":                                  {err: apierrors.NewTimeoutError("slow", 0), want: true},
		"429":                                  {err: apierrors.NewTooManyRequests("slow down", 1), want: true},
		"a connection reset":                   {err: fmt.Errorf("post: %w", syscall.ECONNRESET), want: true},
		"a server timeout asking to come back": {err: apierrors.NewServerTimeout(gr, "create", 2), want: true},
		"403":                                  {err: apierrors.NewForbidden(gr, "", errors.New("RBAC")), want: false},
		"401":                                  {err: apierrors.NewUnauthorized("expired token"), want: false},
		"a certificate not trusted":            {err: &url.Error{Op: "Post", URL: "https://api", Err: x509.UnknownAuthorityError{}}, want: false},
		"a context cancelled":                  {err: context.Canceled, want: false},
		"a 503 without a Retry-After":          {err: apierrors.NewServiceUnavailable("etcd is down"), want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := retriable(tc.err); got != tc.want {
				t.Errorf("retriable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
