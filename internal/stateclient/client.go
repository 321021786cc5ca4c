package stateclient

import (
	"context"
	"crypto/md5" //nolint:gosec // Content-MD5 is part of the protocol, not a security control
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/hashicorp/go-retryablehttp"
)

// Client speaks the REST state protocol to one state address. Create it
// with New. It is safe for concurrent use.
type Client struct {
	cfg              Config // defaults applied; holds the password for basic auth
	state            endpoint
	lock, unlock     *endpoint // nil when not configured
	rc               *retryablehttp.Client
	maxStateBytes    int64
	mu               sync.Mutex
	heldID           string // ID of the lock this client acquired, "" when none
	heldLockInfoJSON []byte // the body sent by Lock, sent again by Unlock
}

// Option configures a Client.
type Option func(*options)

type options struct {
	log       logr.Logger
	transport *http.Transport
}

// WithLogger routes the client's request and retry logs to l at V(1) and
// V(2). Without it the client logs nothing. Log lines carry no secrets.
func WithLogger(l logr.Logger) Option {
	return func(o *options) { o.log = l }
}

// WithTransport makes the client clone base instead of
// http.DefaultTransport. The TLS attributes of the Config are applied on
// top of base's TLS configuration. Meant for tests and benchmarks.
func WithTransport(base *http.Transport) Option {
	return func(o *options) { o.transport = base }
}

// New validates cfg and returns a Client. It checks the addresses (http or
// https), the methods, the retry settings, the size limit and the TLS
// material: a CA PEM holding at least one certificate, a client certificate
// and key given together and matching. Errors wrap ErrInvalidConfig and
// never quote a password or PEM content.
func New(cfg Config, opts ...Option) (*Client, error) {
	o := options{log: logr.Discard()}
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, maxStateBytes: cfg.MaxStateBytes}
	if c.state, err = parseAddress("address", cfg.Address); err != nil {
		return nil, err
	}
	if c.lock, err = optionalAddress("lock address", cfg.LockAddress); err != nil {
		return nil, err
	}
	if c.unlock, err = optionalAddress("unlock address", cfg.UnlockAddress); err != nil {
		return nil, err
	}

	base := http.DefaultTransport.(*http.Transport)
	if o.transport != nil {
		base = o.transport
	}
	transport := base.Clone()
	if transport.TLSClientConfig, err = configureTLS(transport.TLSClientConfig, cfg); err != nil {
		return nil, err
	}

	// Configured as Terraform's http backend configures it: default retry
	// policy and backoff (which honours Retry-After on 429 and 503).
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{Transport: transport}
	rc.RetryMax = cfg.RetryMax
	rc.RetryWaitMin = cfg.RetryWaitMin
	rc.RetryWaitMax = cfg.RetryWaitMax
	rc.Logger = nil
	if o.log.GetSink() != nil {
		rc.Logger = retryLogger{o.log}
	}
	// Hand back the last answer or error so that do can report it with the
	// attempt count, as a typed error, without retryablehttp's formatting.
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	rc.RequestLogHook = countAttempt
	c.rc = rc
	// The TLS material now lives in the transport only.
	c.cfg.ClientCertificatePEM, c.cfg.ClientPrivateKeyPEM, c.cfg.ClientCACertificatePEM = nil, nil, nil
	return c, nil
}

// String describes the client without secrets, so that printing a Client
// (even with %+v) cannot leak the password.
func (c *Client) String() string {
	return "stateclient.Client{" + c.state.url.String() + "}"
}

func optionalAddress(field, raw string) (*endpoint, error) {
	if raw == "" {
		return nil, nil
	}
	e, err := parseAddress(field, raw)
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// attemptsKey is the context key of the attempt counter of one call.
type attemptsKey struct{}

// countAttempt records the number of the attempt about to be made.
func countAttempt(_ retryablehttp.Logger, r *http.Request, retry int) {
	if n, ok := r.Context().Value(attemptsKey{}).(*int); ok {
		*n = retry + 1
	}
}

// do sends one request with retries. u overrides ep's URL (for the ID
// query); body nil means no body. The caller owns the returned body.
//
// Like Terraform, it sets basic auth only for a non-empty Username, and
// sends Content-Type and Content-MD5 with every body. When retries run out
// the error is a *RetryError ("<METHOD> <url> giving up after N
// attempt(s)") wrapping the last transport error or a *StatusError.
func (c *Client) do(ctx context.Context, method string, ep *endpoint, u *url.URL, body []byte) (*http.Response, error) {
	if u == nil {
		u = ep.url
	}
	target := u.String() // never holds userinfo: parseAddress removed it
	attempts := 0
	ctx = context.WithValue(ctx, attemptsKey{}, &attempts)

	var raw any // an untyped nil: no body at all
	if body != nil {
		raw = body // retryablehttp reads a []byte through a fresh bytes.Reader per attempt: no copy
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, method, target, raw)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, target, err)
	}
	switch {
	case c.cfg.Username != "":
		req.SetBasicAuth(c.cfg.Username, c.cfg.Password)
	case ep.user != nil:
		// What net/http does with userinfo in the URL, which we removed.
		pass, _ := ep.user.Password()
		req.SetBasicAuth(ep.user.Username(), pass)
	}
	if body != nil {
		sum := md5.Sum(body) //nolint:gosec // protocol checksum
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
	}

	resp, err := c.rc.Do(req)
	if err != nil {
		if resp != nil { // an error with an answer: the context ended after the headers
			discard(resp)
		}
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return nil, fmt.Errorf("%s %s: %w", method, target, err)
		}
		return nil, &RetryError{Method: method, URL: target, Attempts: attempts, Err: err}
	}
	if retry, _ := c.rc.CheckRetry(ctx, resp, nil); retry {
		// Retries ran out on a retryable status (429, 5xx except 501).
		discard(resp)
		return nil, &RetryError{Method: method, URL: target, Attempts: attempts,
			Err: &StatusError{Method: method, URL: target, StatusCode: resp.StatusCode}}
	}
	return resp, nil
}

// statusError builds the error for an unaccepted answer and releases it.
func statusError(resp *http.Response) error {
	discard(resp)
	return &StatusError{Method: resp.Request.Method, URL: redactURL(resp.Request.URL), StatusCode: resp.StatusCode}
}

// discard drains a little of an unwanted body, so the connection can be
// reused, and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

// retryLogger adapts logr to retryablehttp.LeveledLogger. retryablehttp
// logs methods and URLs; ours never carry userinfo.
type retryLogger struct{ log logr.Logger }

func (l retryLogger) Error(msg string, kv ...any) { l.log.V(1).Info(capitalize(msg), kv...) }
func (l retryLogger) Warn(msg string, kv ...any)  { l.log.V(1).Info(capitalize(msg), kv...) }
func (l retryLogger) Info(msg string, kv ...any)  { l.log.V(1).Info(capitalize(msg), kv...) }
func (l retryLogger) Debug(msg string, kv ...any) { l.log.V(2).Info(capitalize(msg), kv...) }

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
