package cos

import (
	"net/http"
	"time"

	"github.com/infrastate/backend-operator/internal/netguard"
)

// dialIdleConnTimeout is how long a transport built for WithDialContext
// keeps an idle connection. Each Client gets its own transport and
// Clients are built per probe, so connections are closed soon after the
// probe's last request rather than lingering for net/http's 90 seconds.
const dialIdleConnTimeout = 5 * time.Second

// WithDialContext makes every connection of the Client go through dial,
// so that the caller decides, at connection time, which addresses may be
// reached (an address policy checking the resolved IP, for instance with
// a net.Dialer whose Control refuses some ranges). dial gets the
// host:port of the bucket URL (or of WithBaseURL's URL), or of the proxy
// when the environment configures one (HTTPS_PROXY, HTTP_PROXY,
// NO_PROXY): the proxy then makes the onward connection. An error from
// dial makes the request fail with ErrUnreachable, wrapping dial's error.
//
// The Client then uses a transport of its own with net/http's defaults
// (proxy from the environment, TLS with the system roots, HTTP/2,
// net/http's timeouts) and dial, instead of the SDK's shared transports.
// For cos-internal hosts that replaces the SDK's DNS scatter (a random
// address among the resolved ones): dial decides which address to use.
// Idle connections are closed after a few seconds.
//
// WithDialContext and WithHTTPClient exclude each other: New fails when
// both are given, because the caller's transport, not dial, would decide
// where connections go. A caller that needs both puts its dial function
// in its own http.Transport.
func WithDialContext(dial netguard.DialFunc) Option {
	return func(o *options) { o.dial = dial }
}

// WithWrapTransport makes the Client send every request through
// wrap(next), where next is the transport the other options chose
// (http.DefaultTransport when they chose the SDK's defaults, which
// replaces the SDK's DNS scatter for cos-internal hosts): for instance the
// circuits of circuit.Breakers.Transport. The wrapper gets the signed
// request, addressed to the bucket URL (not to WithServiceURL's server).
// The SDK retries what the wrapper refuses, which the circuits refuse
// again at once.
func WithWrapTransport(wrap func(http.RoundTripper) http.RoundTripper) Option {
	return func(o *options) { o.wrap = wrap }
}

// newDialTransport returns a transport with net/http's default settings
// (a clone of http.DefaultTransport) that connects through dial.
func newDialTransport(dial netguard.DialFunc) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = dial
	t.IdleConnTimeout = dialIdleConnTimeout
	return t
}

// redirectPolicy returns the CheckRedirect of the Client's http.Client.
// COS never redirects a read to another host, and following such a
// redirect would send the signed request, security token included (the
// signing transport signs every request it sends), wherever the answer
// points. So a redirect that changes the scheme or the host (port
// included) is never followed: the 3xx answer itself comes back and is
// reported as ErrRedirect. Other redirects are left to next, the caller's
// CheckRedirect, and not followed when it is nil (the SDK's default).
func redirectPolicy(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		first := via[0].URL
		if next == nil || req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
			return http.ErrUseLastResponse
		}
		return next(req, via)
	}
}
