// Package metricsauth guards the manager's metrics endpoint: every request
// must carry a bearer token the API server authenticates (a TokenReview),
// and its user must be allowed the request's verb on its path as a
// non-resource URL (a SubjectAccessReview), as a kube-apiserver's delegated
// authentication and authorization decide.
//
// It does what controller-runtime's metrics filter does with the
// kube-apiserver's libraries, which link the API server's CEL, gRPC and
// OpenTelemetry packages into the manager and cost every manager about
// 17 MiB of resident memory (docs/performance.md). The answers are reused
// as that filter reuses them (an authenticated token for a minute, an
// allowed request for five, a refused one for 30 seconds), and a token
// the API server does not authenticate for 30 seconds too, in caches of
// bounded size: what a scraper was granted is kept apart from what
// forged tokens and requests were refused, so that a flood of those
// cannot push it out.
package metricsauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

const (
	// authenticatedTTL is how long a token the API server authenticated
	// is taken for its user; rejectedTTL how long one it did not is
	// refused without asking again.
	authenticatedTTL = time.Minute
	rejectedTTL      = 30 * time.Second
	// allowTTL and denyTTL are how long an access review is reused.
	allowTTL = 5 * time.Minute
	denyTTL  = 30 * time.Second
	// defaultReviewTimeout bounds a request's reviews, retries included.
	defaultReviewTimeout = 10 * time.Second
	// maxCached bounds each cache: a scraper holds one entry in two of
	// them, and requests with tokens nobody issued must not grow the
	// manager.
	maxCached = 1024
)

// retryBackoff is the kube-apiserver's for its webhooks, which
// controller-runtime's filter uses too.
var retryBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// Guard authenticates and authorizes requests with a Reviewer, caching its
// answers.
type Guard struct {
	reviewer Reviewer
	now      func() time.Time
	backoff  wait.Backoff
	timeout  time.Duration
	// secret keys the token cache (see tokenKey).
	secret []byte
	// authenticated holds the users of the tokens the API server
	// authenticated, rejected the tokens it did not.
	authenticated *expiringCache[authenticationv1.UserInfo]
	rejected      *expiringCache[struct{}]
	// allowed holds the requests allowed, denied those refused with the
	// reason.
	allowed *expiringCache[struct{}]
	denied  *expiringCache[string]
}

// Option configures a Guard.
type Option func(*Guard)

// WithClock replaces time.Now, for the caches' expiry.
func WithClock(now func() time.Time) Option { return func(g *Guard) { g.now = now } }

// WithBackoff replaces the retries of a review that failed.
func WithBackoff(b wait.Backoff) Option { return func(g *Guard) { g.backoff = b } }

// WithReviewTimeout replaces the bound of a request's reviews.
func WithReviewTimeout(d time.Duration) Option { return func(g *Guard) { g.timeout = d } }

// NewGuard returns a Guard that asks reviewer.
func NewGuard(reviewer Reviewer, opts ...Option) *Guard {
	g := &Guard{
		reviewer:      reviewer,
		now:           time.Now,
		backoff:       retryBackoff,
		timeout:       defaultReviewTimeout,
		secret:        make([]byte, sha256.Size),
		authenticated: newExpiringCache[authenticationv1.UserInfo](maxCached),
		rejected:      newExpiringCache[struct{}](maxCached),
		allowed:       newExpiringCache[struct{}](maxCached),
		denied:        newExpiringCache[string](maxCached),
	}
	_, _ = rand.Read(g.secret) // never fails (crypto/rand)
	for _, opt := range opts {
		opt(g)
	}
	return g
}

// FilterProvider is a metricsserver.Options.FilterProvider: it reviews
// with the manager's own client configuration.
func FilterProvider(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building the TokenReview client: %w", err)
	}
	authz, err := authorizationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building the SubjectAccessReview client: %w", err)
	}
	guard := NewGuard(APIReviewer{Tokens: authn.TokenReviews(), Access: authz.SubjectAccessReviews()})
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return guard.Wrap(log, next), nil
	}, nil
}

// Wrap returns a handler that serves next only to requests the API server
// authenticates and authorizes: 401 without a token or with one it does not
// authenticate, 403 when the user may not make the request, 500 when a
// review could not be made within the review timeout. The token is removed
// before next sees the request.
func (g *Guard) Wrap(log logr.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := bearerToken(req.Header.Get("Authorization"))
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		ctx, cancel := context.WithTimeout(req.Context(), g.timeout)
		defer cancel()
		user, authenticated, err := g.authenticate(ctx, token)
		if err != nil {
			log.Error(err, "Could not review a scrape's token")
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
			return
		}
		if !authenticated {
			log.V(1).Info("Refused a scrape whose token is not authenticated")
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		verb := strings.ToLower(req.Method)
		review, err := g.authorize(ctx, user, verb, req.URL.Path)
		if err != nil {
			log.Error(err, "Could not review a scrape's access", "user", user.Username, "verb", verb, "path", req.URL.Path)
			http.Error(w, "Authorization failed for user "+user.Username, http.StatusInternalServerError)
			return
		}
		if !review.allowed {
			log.V(1).Info("Refused a scrape", "user", user.Username, "verb", verb, "path", req.URL.Path, "reason", review.reason)
			http.Error(w, "Authorization denied for user "+user.Username, http.StatusForbidden)
			return
		}
		req = req.Clone(req.Context())
		req.Header.Del("Authorization")
		next.ServeHTTP(w, req)
	})
}

// bearerToken returns the token of an Authorization header of the Bearer
// scheme (the scheme's case ignored), as the kube-apiserver reads it.
func bearerToken(header string) (string, bool) {
	scheme, credentials, found := strings.Cut(strings.TrimSpace(header), " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token, _, _ := strings.Cut(credentials, " ")
	return token, token != ""
}

// authenticate returns the user the API server says token belongs to.
func (g *Guard) authenticate(ctx context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	key := tokenKey(g.secret, token)
	now := g.now()
	if user, ok := g.authenticated.get(key, now); ok {
		return user, true, nil
	}
	if _, ok := g.rejected.get(key, now); ok {
		return authenticationv1.UserInfo{}, false, nil
	}
	var status authenticationv1.TokenReviewStatus
	err := g.retry(ctx, func(ctx context.Context) (err error) {
		status, err = g.reviewer.ReviewToken(ctx, token)
		return err
	})
	if err != nil {
		return authenticationv1.UserInfo{}, false, err
	}
	if !status.Authenticated {
		g.rejected.put(key, struct{}{}, now.Add(rejectedTTL), now)
		return authenticationv1.UserInfo{}, false, nil
	}
	g.authenticated.put(key, status.User, now.Add(authenticatedTTL), now)
	return status.User, true, nil
}

// accessReview is the answer to an access review.
type accessReview struct {
	allowed bool
	reason  string
}

// authorize says whether user may make the request verb on the
// non-resource URL path.
func (g *Guard) authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (accessReview, error) {
	spec := accessSpec(user, verb, path)
	key := accessKey(spec)
	now := g.now()
	if _, ok := g.allowed.get(key, now); ok {
		return accessReview{allowed: true}, nil
	}
	if reason, ok := g.denied.get(key, now); ok {
		return accessReview{reason: reason}, nil
	}
	var review accessReview
	err := g.retry(ctx, func(ctx context.Context) error {
		status, err := g.reviewer.ReviewAccess(ctx, spec)
		review = accessReview{allowed: status.Allowed && !status.Denied, reason: status.Reason}
		return err
	})
	if err != nil {
		return accessReview{}, err
	}
	if review.allowed {
		g.allowed.put(key, struct{}{}, now.Add(allowTTL), now)
	} else {
		g.denied.put(key, review.reason, now.Add(denyTTL), now)
	}
	return review, nil
}

// retry runs review, again after g.backoff while it fails with an error
// worth retrying and ctx lasts.
func (g *Guard) retry(ctx context.Context, review func(context.Context) error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, g.backoff, func(ctx context.Context) (bool, error) {
		last = review(ctx)
		if last == nil {
			return true, nil
		}
		if !retriable(last) {
			return false, last
		}
		return false, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}
