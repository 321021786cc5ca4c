package cos

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	sdk "github.com/tencentyun/cos-go-sdk-v5"

	"github.com/infrastate/backend-operator/internal/netguard"
)

// DefaultTimeout is the HTTP client timeout of a Client built without
// WithHTTPClient: Terraform's cos backend uses the same.
const DefaultTimeout = 60 * time.Second

// checkBucketMaxKeys is the listing size of CheckBucket: it only needs the
// answer, not the objects.
const checkBucketMaxKeys = 1

// Client reads one CosBackend's bucket. Create it with New. It is safe for
// concurrent use and, unless built WithDialContext, holds no connection of
// its own, so creating one per reconcile is cheap. One built
// WithDialContext has its own transport, whose idle connections close a
// few seconds after its last request.
type Client struct {
	sdk           *sdk.Client
	bucket        string
	prefix        string
	key           string
	maxStateBytes int64
	baseURL       *url.URL
	redact        redactor
}

// Option configures a Client in New.
type Option func(*options)

type options struct {
	httpClient *http.Client
	baseURL    *url.URL
	serviceURL *url.URL
	dial       netguard.DialFunc
	wrap       func(http.RoundTripper) http.RoundTripper
}

// WithHTTPClient makes the Client send requests through hc's Transport,
// with hc's Timeout. The signing transport (cos.AuthorizationTransport)
// wraps hc.Transport; hc itself is not modified. hc's CheckRedirect is
// consulted only for redirects to the same scheme and host: redirects
// elsewhere are never followed (see ErrRedirect). Without this option
// requests go through the SDK's default transports (or WithDialContext's)
// with DefaultTimeout. It cannot be combined with WithDialContext.
func WithHTTPClient(hc *http.Client) Option {
	return func(o *options) { o.httpClient = hc }
}

// WithBaseURL sends every request to u instead of BucketURL(cfg): the test
// hook that points the Client at a local server, such as the one
// costest.Server.URL returns. Only u's scheme, host and port are used: the
// SDK resolves request paths against it, dropping any path u has. u is
// trusted as given: an http URL is used without AllowHTTPEndpoint.
func WithBaseURL(u *url.URL) Option {
	return func(o *options) { o.baseURL = u }
}

// errConflictingOptions is New's answer to WithDialContext together with
// WithHTTPClient.
var errConflictingOptions = errors.New("cos: WithDialContext and WithHTTPClient exclude each other: put the dial function in the http.Client's transport")

// errBaseAndServiceURL is New's answer to WithBaseURL together with
// WithServiceURL.
var errBaseAndServiceURL = errors.New("cos: WithBaseURL and WithServiceURL exclude each other")

// New validates cfg and returns a Client. It performs no I/O. Errors about
// cfg wrap ErrInvalidConfig and quote no secret.
func New(cfg Config, opts ...Option) (*Client, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.dial != nil && o.httpClient != nil {
		return nil, errConflictingOptions
	}
	if o.baseURL != nil && o.serviceURL != nil {
		return nil, errBaseAndServiceURL
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	base := o.baseURL
	if base == nil {
		u, err := BucketURL(cfg)
		if err != nil {
			return nil, err
		}
		base = u
	} else {
		u := *base // the SDK keeps the pointer; keep our own copy
		base = &u
	}

	auth := &sdk.AuthorizationTransport{
		SecretID:     cfg.SecretID,
		SecretKey:    cfg.SecretKey,
		SessionToken: cfg.SecurityToken,
	}
	hc := &http.Client{Transport: auth, Timeout: DefaultTimeout, CheckRedirect: redirectPolicy(nil)}
	switch {
	case o.httpClient != nil:
		auth.Transport = o.httpClient.Transport // nil: the SDK's defaults
		hc.Timeout = o.httpClient.Timeout
		hc.CheckRedirect = redirectPolicy(o.httpClient.CheckRedirect)
	case o.dial != nil:
		auth.Transport = newDialTransport(o.dial)
	}
	if o.serviceURL != nil {
		next := auth.Transport
		if next == nil {
			next = http.DefaultTransport // not the SDK's DNS scatter: the service host is not a COS host
		}
		auth.Transport = &serviceTransport{service: o.serviceURL, next: next}
	}
	if o.wrap != nil {
		next := auth.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		auth.Transport = o.wrap(next) // under the signing, over WithServiceURL's rewrite: it sees the bucket URL
	}
	// auth.Transport nil: the SDK picks its DNS scatter transport for
	// cos-internal hosts and http.DefaultTransport otherwise.
	return &Client{
		sdk:           sdk.NewClient(&sdk.BaseURL{BucketURL: base}, hc),
		bucket:        cfg.Bucket,
		prefix:        cfg.Prefix,
		key:           cfg.Key,
		maxStateBytes: cfg.MaxStateBytes,
		baseURL:       base,
		redact:        newRedactor(cfg.SecretKey, cfg.SecurityToken),
	}, nil
}

// BaseURL returns the URL requests are sent to: BucketURL of the Config,
// or the WithBaseURL override.
func (c *Client) BaseURL() *url.URL {
	u := *c.baseURL
	return &u
}

// CheckBucket checks that the bucket answers to a listing of the prefix,
// as Terraform does before it uses a workspace. It lists at most one
// object. A 404 (NoSuchBucket) is ErrBucketNotFound, a refusal
// ErrAccessDenied, no answer ErrUnreachable, a redirect ErrRedirect;
// other answers are a *ResponseError.
func (c *Client) CheckBucket(ctx context.Context) error {
	_, resp, err := c.sdk.Bucket.Get(ctx, &sdk.BucketGetOptions{Prefix: c.prefix, MaxKeys: checkBucketMaxKeys})
	if err != nil {
		return c.redact.error(c.classify("list objects with prefix "+strconv.Quote(c.prefix), "", resp, err))
	}
	return nil
}
