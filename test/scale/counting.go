package main

import (
	"maps"
	"net/http"
	"strconv"
	"sync"

	"k8s.io/client-go/rest"
)

// requestCounter counts the API requests that go through it, keyed as
// the API server's apiserver_request_total counts them, so that the
// harness's own requests can be taken off the API server's totals. A
// request that got no answer is not counted: the API server did not
// count it either.
type requestCounter struct {
	mu     sync.Mutex
	counts requestCounts
}

// newRequestCounter returns an empty counter.
func newRequestCounter() *requestCounter {
	return &requestCounter{counts: requestCounts{}}
}

// wrap returns a copy of cfg whose requests c counts, with client-side
// rate limiting off (QPS -1), as controller-runtime's GetConfig leaves it
// for the manager.
func (c *requestCounter) wrap(cfg *rest.Config) *rest.Config {
	out := unthrottled(cfg)
	out.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return countingTransport{counter: c, next: next}
	})
	return out
}

// snapshot returns a copy of the counts so far.
func (c *requestCounter) snapshot() requestCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// record counts one answered request.
func (c *requestCounter) record(req *http.Request, code int) {
	verb, resource, subresource, ok := classifyRequest(req.Method, req.URL, req.Header.Get("Content-Type"))
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[requestKey{Verb: verb, Resource: resource, Subresource: subresource, Code: strconv.Itoa(code)}]++
}

// countingTransport is the http.RoundTripper of requestCounter.
type countingTransport struct {
	counter *requestCounter
	next    http.RoundTripper
}

// RoundTrip sends req and counts it once answered.
func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		t.counter.record(req, resp.StatusCode)
	}
	return resp, err
}

// unthrottled returns a copy of cfg with client-side rate limiting off,
// as controller-runtime's GetConfig sets it (QPS -1): the API server's
// priority and fairness does the limiting.
func unthrottled(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.QPS = -1
	out.Burst = 0
	out.RateLimiter = nil
	return out
}
