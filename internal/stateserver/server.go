package stateserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// Server serves the REST state protocol from a [Store]. It implements
// [http.Handler]; serve it with net/http or httptest. Create it with [New].
type Server struct {
	store  Store
	logger *slog.Logger
	auth   *basicAuth
	faults faultSet
	// unlockBodies is which UNLOCK bodies the server accepts.
	unlockBodies UnlockBodies
	// conflict, unlockCheck and reentrant are the lock behaviours of
	// modes.go.
	conflict    ConflictAnswer
	unlockCheck UnlockCheck
	reentrant   bool
	// gitlab, when set, makes the server GitLab's managed state (gitlab.go).
	gitlab *gitlabMode
}

var _ http.Handler = (*Server)(nil)

// Option configures a [Server] in [New].
type Option func(*Server)

// WithBasicAuth requires HTTP basic authentication with this username and
// password on every request. A request without basic credentials is answered
// 401 Unauthorized with a WWW-Authenticate challenge (Terraform reports
// "requires auth"); one with wrong credentials 403 Forbidden (Terraform
// reports "invalid auth"). Credentials are compared in constant time.
func WithBasicAuth(username, password string) Option {
	return func(s *Server) {
		s.auth = &basicAuth{
			username: sha256.Sum256([]byte(username)),
			password: sha256.Sum256([]byte(password)),
		}
	}
}

// WithLogger logs one line per request to logger, with the method, URL path,
// status and duration, plus a warning for every force unlock naming the
// holder it released (its ID and Who) and an error for every store failure.
// Bodies, query strings and credentials are never logged. Without this
// option (or with a nil logger) nothing is logged.
func WithLogger(logger *slog.Logger) Option {
	return func(s *Server) {
		if logger != nil {
			s.logger = logger
		}
	}
}

// WithRequestCounting makes [Server.Requests] count every request from the
// start. Without it, counting starts with the first [Server.InjectFault], so
// that a server given no fault keeps no per-path counters.
func WithRequestCounting() Option {
	return func(s *Server) {
		s.faults.counting = true
	}
}

// UnlockBodies says which UNLOCK bodies a [Server] accepts. The REST state
// servers people run differ here, and a client that releases a lock it did
// not take must cope with each; the options other than the default make
// this server behave like one of them.
type UnlockBodies int

const (
	// AcceptAnyUnlock accepts the LockInfo sent at lock time (Terraform's
	// unlock), a LockInfo naming the holder's ID (OpenTofu 1.10+
	// force-unlock) and an empty body (terraform force-unlock). The
	// default.
	AcceptAnyUnlock UnlockBodies = iota
	// AcceptEmptyUnlock accepts the LockInfo sent at lock time and the
	// empty body, and refuses with 400 any other body, such as one naming
	// only the ID.
	AcceptEmptyUnlock
	// AcceptIDUnlock accepts a LockInfo naming the holder's ID, and
	// refuses the empty body with 500, as Terraform's own test server does.
	AcceptIDUnlock
	// AcceptNoForceUnlock accepts only the LockInfo sent at lock time: 400
	// for another body, 500 for the empty one.
	AcceptNoForceUnlock
)

// WithUnlockBodies makes the server accept only the UNLOCK bodies that
// accept allows (see [UnlockBodies]).
func WithUnlockBodies(accept UnlockBodies) Option {
	return func(s *Server) {
		s.unlockBodies = accept
	}
}

// New returns a Server keeping state and locks in store.
func New(store Store, opts ...Option) *Server {
	s := &Server{
		store:  store,
		logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		faults: faultSet{counts: map[requestKey]int{}},
	}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// ServeHTTP implements [http.Handler]: it counts the request, applies any
// injected [Fault], checks credentials and then serves the protocol (or
// GitLab's, with [WithGitLab]).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	// Deferred so that aborted handlers (dropped HTTP/2 streams) are
	// logged too.
	defer s.logRequest(rec, r, start)

	if f, ok := s.faults.arrive(r); ok && s.applyFault(rec, r, f) {
		return
	}
	if s.gitlab != nil {
		s.gitlabServe(rec, r)
		return
	}
	if s.auth != nil {
		switch s.auth.check(r) {
		case credentialsMissing:
			rec.Header().Set("WWW-Authenticate", `Basic realm="stateserver", charset="UTF-8"`)
			http.Error(rec, "authentication required", http.StatusUnauthorized)
			return
		case credentialsWrong:
			http.Error(rec, "invalid credentials", http.StatusForbidden)
			return
		}
	}
	s.route(rec, r)
}

func (s *Server) logRequest(rec *recorder, r *http.Request, start time.Time) {
	status := rec.status
	if status == 0 && !rec.dropped {
		status = http.StatusOK
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", status),
		slog.Duration("duration", time.Since(start)),
	}
	if rec.dropped {
		attrs = append(attrs, slog.Bool("dropped", true))
	}
	s.logger.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}

// basicAuth holds digests of the expected credentials, so that comparisons
// take the same time whatever the lengths involved.
type basicAuth struct {
	username, password [sha256.Size]byte
}

// credentialsCheck is the outcome of checking a request's credentials.
type credentialsCheck int

const (
	credentialsValid credentialsCheck = iota
	// credentialsMissing: no basic credentials, or unreadable ones.
	credentialsMissing
	// credentialsWrong: basic credentials that do not match.
	credentialsWrong
)

func (a *basicAuth) check(r *http.Request) credentialsCheck {
	user, pass, ok := r.BasicAuth()
	if !ok {
		return credentialsMissing
	}
	u := sha256.Sum256([]byte(user))
	p := sha256.Sum256([]byte(pass))
	userOK := subtle.ConstantTimeCompare(u[:], a.username[:])
	passOK := subtle.ConstantTimeCompare(p[:], a.password[:])
	if userOK&passOK != 1 {
		return credentialsWrong
	}
	return credentialsValid
}

// recorder remembers the status written, for the request log.
type recorder struct {
	http.ResponseWriter
	status  int
	dropped bool
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
