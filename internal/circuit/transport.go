package circuit

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Address is the circuit address of u: its scheme and host, lower-cased,
// and its port (the scheme's default when u names none), as
// scheme://host:port. It holds neither userinfo, path nor query.
func Address(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// Transport returns next, sending every request of namespace through the
// circuit of its URL's address: a request to an open circuit fails at
// once with an *OpenError (which an http.Client returns inside a
// *url.Error), and how each request that went through ended is reported
// to its circuit (see Outcome). It forwards CloseIdleConnections to next.
func (b *Breakers) Transport(namespace string, next http.RoundTripper) http.RoundTripper {
	return &transport{b: b, namespace: namespace, next: next}
}

// transport is the http.RoundTripper of Breakers.Transport.
type transport struct {
	b         *Breakers
	namespace string
	next      http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ticket, err := t.b.Allow(t.namespace, Address(req.URL))
	if err != nil {
		if req.Body != nil { // a RoundTripper closes the body, even on errors
			_ = req.Body.Close()
		}
		return nil, err
	}
	resp, err := t.next.RoundTrip(req)
	ticket.Done(outcomeOf(req, err, time.Now())) // the deadline is the real clock's
	return resp, err
}

// CloseIdleConnections closes next's idle connections, as
// http.Client.CloseIdleConnections expects of its transport.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// outcomeOf classifies how req ended at now with err: no error is an
// answer; a timeout, or any error once the request's deadline has passed,
// is no answer; an error of a request its caller cancelled is abandoned;
// any other error (refused, reset, TLS) came without waiting out a
// deadline and is as good as an answer.
func outcomeOf(req *http.Request, err error, now time.Time) Outcome {
	if err == nil {
		return Answered
	}
	if deadline, ok := req.Context().Deadline(); ok && !now.Before(deadline) {
		return Unanswered
	}
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout() {
		return Unanswered
	}
	if errors.Is(err, context.Canceled) || req.Context().Err() != nil {
		return Abandoned
	}
	return Answered
}
