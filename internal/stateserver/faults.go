package stateserver

import (
	"net/http"
	"slices"
	"sync"
	"time"
)

// Fault makes the server misbehave on purpose, for tests of clients. Inject
// it with [Server.InjectFault].
//
// A request matches a fault when Method and Path match (an empty field
// matches anything). The first matching fault, in injection order, applies;
// others are not consulted. Faults apply before authentication and routing,
// so they also hit unauthenticated requests and unknown paths.
//
// A matching fault acts in this order:
//  1. it waits Delay (or until the client gives up on the request);
//  2. with Drop, it closes the connection without answering: the client
//     sees a transport error such as EOF or "connection reset";
//  3. otherwise, with a non-zero Status, it answers with Header, Status and
//     Body instead of the normal handling;
//  4. otherwise (Status 0, no Drop: a pure delay) the request is then
//     handled normally.
//
// Note that Go's http.Transport may transparently resend an idempotent
// request (GET, HEAD, OPTIONS, TRACE) once after a dropped keep-alive
// connection, so a single client call can show up as two requests.
type Fault struct {
	// Method is the HTTP method to match, such as "GET" or "LOCK"; empty
	// matches every method.
	Method string
	// Path is the exact URL path to match, such as "/state/x" (no query);
	// empty matches every path.
	Path string
	// Status is the status code to answer with; 0 answers nothing special
	// (see the order above).
	Status int
	// Body is written after Status. It is ignored when Status is 0.
	Body []byte
	// Header is added to the response before Status, for instance
	// Retry-After with a 429 or 503. It is ignored when Status is 0.
	Header http.Header
	// Delay is waited before anything else.
	Delay time.Duration
	// Drop closes the connection without any answer, after Delay.
	Drop bool
	// Times is how many requests the fault applies to before it clears
	// itself; 0 keeps it until [Server.ClearFaults].
	Times int
}

// faultSet holds the injected faults and the request counters.
type faultSet struct {
	mu     sync.Mutex
	faults []*Fault
	// counting is set by the first InjectFault or by WithRequestCounting;
	// until then counts stays empty, whatever the paths requested.
	counting bool
	counts   map[requestKey]int
}

type requestKey struct{ method, path string }

// InjectFault adds f after the faults already injected, and starts the
// counters of [Server.Requests] if they were not running. It is safe to call
// while requests are being served. Intended for tests.
func (s *Server) InjectFault(f Fault) {
	f.Header = f.Header.Clone()
	f.Body = cloneBytes(f.Body)
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.faults = append(s.faults.faults, &f)
	s.faults.counting = true
}

// ClearFaults removes every injected fault; requests already waiting on a
// fault's Delay still complete it. Intended for tests.
func (s *Server) ClearFaults() {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.faults = nil
}

// Requests returns how many requests the server received with this method
// and URL path (no query), whatever their outcome: faulted, refused by
// authentication or served. An empty method or path matches any. Intended
// for tests, for instance to count the attempts of a retrying client.
//
// Requests are counted from the first [Server.InjectFault] on, or from the
// start with [WithRequestCounting]: a server that is never given a fault,
// such as the stateserver binary, keeps no counter for the names it serves.
func (s *Server) Requests(method, path string) int {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	n := 0
	for k, c := range s.faults.counts {
		if (method == "" || method == k.method) && (path == "" || path == k.path) {
			n += c
		}
	}
	return n
}

// ResetRequests sets every counter of [Server.Requests] back to zero.
// Intended for tests.
func (s *Server) ResetRequests() {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	clear(s.faults.counts)
}

// arrive counts r and returns a copy of the fault that applies to it, if
// any, using up one of its Times.
func (fs *faultSet) arrive(r *http.Request) (Fault, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.counting {
		fs.counts[requestKey{r.Method, r.URL.Path}]++
	}
	for i, f := range fs.faults {
		if (f.Method != "" && f.Method != r.Method) || (f.Path != "" && f.Path != r.URL.Path) {
			continue
		}
		applied := *f
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				fs.faults = slices.Delete(fs.faults, i, i+1)
			}
		}
		return applied, true
	}
	return Fault{}, false
}

// applyFault acts out f on the request and reports whether it answered (or
// dropped) it, in which case the normal handling must not run.
func (s *Server) applyFault(w *recorder, r *http.Request, f Fault) bool {
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			w.dropped = true
			return true
		}
	}
	switch {
	case f.Drop:
		dropConnection(w)
		return true
	case f.Status != 0:
		for k, vs := range f.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.WriteHeader(f.Status)
		_, _ = w.Write(f.Body)
		return true
	default:
		return false
	}
}

// dropConnection closes the client connection without writing a response.
// HTTP/1 connections are hijacked and closed; where hijacking is not
// supported (HTTP/2) the handler is aborted, which resets the stream.
func dropConnection(w *recorder) {
	w.dropped = true
	conn, _, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}
