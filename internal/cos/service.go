package cos

import (
	"fmt"
	"net/http"
	"net/url"
)

// WithServiceURL sends every request of the Client to u's scheme, host and
// port instead of the bucket's host, for tests and demos: u is a COS
// protocol server that, like COS, tells buckets apart by the Host header
// (costest.Server.ServiceURL, hack/cosdouble). The request is otherwise
// the one the real service would get: its Host header, and so its
// signature, name the bucket URL's host (BucketURL of the Config). Take
// u from ParseServiceURL. It cannot be combined with WithBaseURL; with
// WithDialContext, dial gets u's host and port.
func WithServiceURL(u *url.URL) Option {
	return func(o *options) { o.serviceURL = u }
}

// ParseServiceURL parses the URL of a COS protocol server for
// WithServiceURL: http or https, a host, nothing else (a path, a query or
// user info would be dropped, so it is refused). Errors wrap
// ErrInvalidConfig.
func ParseServiceURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the input, user info included.
		return nil, fmt.Errorf("%w: the service URL does not parse as a URL", ErrInvalidConfig)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil || u.Opaque != "" {
		return nil, fmt.Errorf("%w: service URL %q must be http(s)://host[:port] with nothing after the host", ErrInvalidConfig, u.Redacted())
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// serviceTransport sends each request to service's scheme and host,
// keeping the Host header of the request as it was signed.
type serviceTransport struct {
	service *url.URL
	next    http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *serviceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	if out.Host == "" {
		out.Host = req.URL.Host
	}
	out.URL.Scheme, out.URL.Host = t.service.Scheme, t.service.Host
	return t.next.RoundTrip(out)
}
