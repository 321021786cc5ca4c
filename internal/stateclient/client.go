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
	"sync"

	"github.com/go-logr/logr"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/infrastate/backend-operator/internal/netguard"
)

// Client speaks the REST state protocol to one state address. Create it
// with New. It is safe for concurrent use.
type Client struct {
	cfg              Config // defaults applied; holds the password for basic auth
	state            endpoint
	lock, unlock     *endpoint // nil when not configured
	rc               *retryablehttp.Client
	secrets          secrets // removed from every text the client returns or logs
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
	dial      netguard.DialFunc
	wrap      func(http.RoundTripper) http.RoundTripper
	// tlsCache, when set, keeps TLS material parsed (see WithTLSCache).
	tlsCache *TLSCache
}

// WithLogger routes the client's request and retry logs to l at V(1) and
// V(2). Without it the client logs nothing. Log lines carry no secret and
// no query: URLs are printed as scheme://host/path.
func WithLogger(l logr.Logger) Option {
	return func(o *options) { o.log = l }
}

// WithTransport makes the client clone base instead of
// http.DefaultTransport. The TLS attributes of the Config are applied on
// top of base's TLS configuration. Meant for tests and benchmarks.
func WithTransport(base *http.Transport) Option {
	return func(o *options) { o.transport = base }
}

// WithDialContext makes the client open every connection with dial (for
// instance a netguard.Dialer's DialContext, which enforces an address
// policy) instead of net/http's dialer. The transport's own DialTLSContext
// is cleared so that TLS connections are dialled through dial as well.
// Through a proxy from the environment dial connects to the proxy.
func WithDialContext(dial netguard.DialFunc) Option {
	return func(o *options) { o.dial = dial }
}

// WithWrapTransport makes the client send every attempt through
// wrap(transport), where transport is the client's own (TLS and dial
// applied): for instance the circuits of circuit.Breakers.Transport. An
// error of the wrapper that matches circuit.ErrOpen is not retried: the
// wrapper refused the request without sending it, and would refuse the
// retry the same way.
func WithWrapTransport(wrap func(http.RoundTripper) http.RoundTripper) Option {
	return func(o *options) { o.wrap = wrap }
}

// New validates cfg and returns a Client. It checks the addresses (http or
// https), the methods, the retry settings, the attempt timeout, the size
// limit and the TLS material: a CA PEM holding at least one certificate, a
// client certificate and key given together and matching. Errors wrap
// ErrInvalidConfig and never quote a password, a query or PEM content.
func New(cfg Config, opts ...Option) (*Client, error) {
	o := options{log: logr.Discard()}
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, maxStateBytes: cfg.MaxStateBytes, secrets: newSecrets(cfg)}
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
	if o.tlsCache != nil {
		transport.TLSClientConfig, err = o.tlsCache.configure(transport.TLSClientConfig, cfg)
	} else {
		transport.TLSClientConfig, err = configureTLS(transport.TLSClientConfig, cfg)
	}
	if err != nil {
		return nil, err
	}
	if o.dial != nil {
		transport.DialContext = o.dial
		transport.DialTLSContext = nil
		transport.Dial, transport.DialTLS = nil, nil //nolint:staticcheck // cleared so that they cannot bypass dial
	}

	var rt http.RoundTripper = transport
	if o.wrap != nil {
		rt = o.wrap(transport)
	}
	c.rc = newRetryClient(cfg, rt)
	if o.log.GetSink() != nil {
		c.rc.Logger = retryLogger{log: o.log, secrets: c.secrets}
	}
	// The TLS material now lives in the transport only.
	c.cfg.ClientCertificatePEM, c.cfg.ClientPrivateKeyPEM, c.cfg.ClientCACertificatePEM = nil, nil, nil
	return c, nil
}

// CloseIdleConnections closes the connections the client keeps open for
// its next request. A caller that sends requests only now and then (a
// periodic probe) calls it when it is done, so that no connection, and no
// goroutine on either side, waits idle until the next one.
func (c *Client) CloseIdleConnections() {
	c.rc.HTTPClient.CloseIdleConnections()
}

// String describes the client without secrets, so that printing a Client
// (even with %+v) cannot leak the password or a query.
func (c *Client) String() string {
	return "stateclient.Client{" + c.state.printable + "}"
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

// payload is the body of a request: what go-retryablehttp opens anew for
// every attempt, its length and its MD5.
type payload struct {
	// raw is what retryablehttp.NewRequestWithContext takes: a []byte,
	// which it reads through a fresh bytes.Reader per attempt, or a
	// retryablehttp.ReaderFunc, which it calls once per attempt (and once
	// more when the request is built) and never buffers.
	raw    any
	size   int64
	md5sum [16]byte
}

// bytesPayload returns data as a payload, its MD5 computed once whatever
// the number of attempts and data sent without being copied.
func bytesPayload(data []byte) *payload {
	return &payload{raw: data, size: int64(len(data)), md5sum: md5.Sum(data)} //nolint:gosec // protocol checksum
}

// do sends one request to ep with retries; body nil means no body. The
// caller owns the returned body.
func (c *Client) do(ctx context.Context, method string, ep *endpoint, body []byte) (*http.Response, error) {
	if body == nil {
		return c.send(ctx, method, ep, nil, nil)
	}
	return c.send(ctx, method, ep, nil, bytesPayload(body))
}

// send is do with any payload (nil: no body). u overrides ep's URL (for
// the ID query).
//
// Like Terraform, it sets basic auth only for a non-empty Username, and
// sends Content-Type and Content-MD5 with every body. When retries run out
// the error is a *RetryError ("<METHOD> <url> giving up after N
// attempt(s)") wrapping the last transport error or a *StatusError. URLs
// in errors are ep's printable form; transport errors are cleaned of
// answer bytes and secrets.
func (c *Client) send(ctx context.Context, method string, ep *endpoint, u *url.URL, body *payload) (*http.Response, error) {
	if u == nil {
		u = ep.url
	}
	target := ep.printable
	attempts := 0
	ctx = context.WithValue(ctx, attemptsKey{}, &attempts)

	var raw any // an untyped nil: no body at all
	if body != nil {
		raw = body.raw
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, method, u.String(), raw)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, target, c.secrets.cleanTransportError(err, target))
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
		// retryablehttp knows the length of a []byte but not of a
		// ReaderFunc's reader; without it net/http would send chunked.
		req.ContentLength = body.size
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-MD5", base64.StdEncoding.EncodeToString(body.md5sum[:]))
	}

	resp, err := c.rc.Do(req)
	if err != nil {
		if resp != nil { // an error with an answer: a refused redirect, or the context ended after the headers
			discard(resp)
		}
		err = c.secrets.cleanTransportError(err, target)
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
// It names the first request of the call, not a redirect's target: the
// Location is bytes of an answer.
func statusError(resp *http.Response) error {
	discard(resp)
	first := resp.Request
	for first.Response != nil && first.Response.Request != nil {
		first = first.Response.Request
	}
	return &StatusError{Method: first.Method, URL: printableURL(first.URL), StatusCode: resp.StatusCode}
}

// discard drains a little of an unwanted body, so the connection can be
// reused, and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}
