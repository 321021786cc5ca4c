package stateclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/infrastate/backend-operator/internal/circuit"
	"github.com/infrastate/backend-operator/internal/netguard"
)

// maxRedirects is net/http's default limit, kept: a call stops after 10
// consecutive requests.
const maxRedirects = 10

// newRetryClient configures go-retryablehttp as Terraform's http backend
// does (retry settings from the Config, default retry policy and
// backoff), with the deviations the package doc lists: Retry-After capped
// at RetryWaitMax, an attempt timeout, redirects only within the origin,
// and no retry of what the client itself refused.
func newRetryClient(cfg Config, transport http.RoundTripper) *retryablehttp.Client {
	// Built field by field: retryablehttp.NewClient would build an
	// http.Client with a transport of its own, replaced at once, for
	// every client (a probe builds one).
	return &retryablehttp.Client{
		HTTPClient: &http.Client{
			Transport:     transport,
			Timeout:       cfg.AttemptTimeout, // 0: none
			CheckRedirect: checkRedirect,
		},
		RetryMax:     cfg.RetryMax,
		RetryWaitMin: cfg.RetryWaitMin,
		RetryWaitMax: cfg.RetryWaitMax,
		Backoff:      cappedBackoff,
		CheckRetry:   checkRetry,
		// Hand back the last answer or error so that do can report it
		// with the attempt count, as a typed error, without
		// retryablehttp's formatting.
		ErrorHandler:   retryablehttp.PassthroughErrorHandler,
		RequestLogHook: countAttempt,
	}
}

// cappedBackoff is go-retryablehttp's DefaultBackoff (min * 2^n, capped at
// max; Retry-After on 429 and 503) with Retry-After capped at max too: a
// server cannot make the client sleep longer than RetryWaitMax.
func cappedBackoff(minWait, maxWait time.Duration, attempt int, resp *http.Response) time.Duration {
	return min(retryablehttp.DefaultBackoff(minWait, maxWait, attempt, resp), maxWait)
}

// checkRetry is go-retryablehttp's DefaultRetryPolicy, except that what
// the client refused itself (a redirect out of the origin, an address the
// address policy denies, a request to a server whose circuit is open, a
// body that is not what the caller announced) is not retried: it would be
// refused again.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if errors.Is(err, ErrRedirectRefused) || errors.Is(err, netguard.ErrAddressDenied) || errors.Is(err, circuit.ErrOpen) || errors.Is(err, ErrBodyMismatch) {
		return false, nil
	}
	return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
}

// checkRedirect follows a redirect only to the scheme, host and port of
// the first request, at most maxRedirects times. The error never quotes
// the Location: it is bytes of the answer.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		// go-retryablehttp recognises this text and does not retry.
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	first := via[0].URL
	var other string
	switch {
	case !strings.EqualFold(req.URL.Scheme, first.Scheme):
		other = "scheme"
	case !strings.EqualFold(req.URL.Hostname(), first.Hostname()):
		other = "host"
	case portOf(req.URL) != portOf(first):
		other = "port"
	default:
		return nil
	}
	return fmt.Errorf("%w: the server redirected to another %s; only redirects to the same scheme, host and port are followed", ErrRedirectRefused, other)
}

// portOf returns u's port, or the scheme's default port.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// attemptsKey is the context key of the attempt counter of one call.
type attemptsKey struct{}

// countAttempt records the number of the attempt about to be made.
func countAttempt(_ retryablehttp.Logger, r *http.Request, retry int) {
	if n, ok := r.Context().Value(attemptsKey{}).(*int); ok {
		*n = retry + 1
	}
}
