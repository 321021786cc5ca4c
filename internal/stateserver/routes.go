package stateserver

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

const (
	// MethodLock is the default lock method of Terraform's http backend.
	MethodLock = "LOCK"
	// MethodUnlock is the default unlock method of Terraform's http backend.
	MethodUnlock = "UNLOCK"

	// statePrefix starts every path the server serves.
	statePrefix = "/state/"
	// lockSegment ends the alternative lock path /state/<name>/lock.
	lockSegment = "lock"
	// maxNameBytes bounds state names.
	maxNameBytes = 200
)

var (
	stateMethods = strings.Join([]string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, MethodLock, MethodUnlock}, ", ")
	lockMethods  = strings.Join([]string{http.MethodPost, http.MethodDelete, MethodLock, MethodUnlock}, ", ")
)

// route dispatches on the path and method:
//
//	/state/<name>       GET, POST, PUT, DELETE, LOCK, UNLOCK
//	/state/<name>/lock  POST or LOCK (lock), DELETE or UNLOCK (unlock)
//
// Anything else under a valid path is 405; other paths are 404.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	name, isLockPath, found, err := parsePath(r.URL)
	switch {
	case !found:
		http.NotFound(w, r)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if isLockPath {
		switch r.Method {
		case http.MethodPost, MethodLock:
			s.lock(w, r, name)
		case http.MethodDelete, MethodUnlock:
			s.unlock(w, r, name)
		default:
			methodNotAllowed(w, lockMethods)
		}
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.get(w, r, name)
	case http.MethodPost, http.MethodPut:
		s.update(w, r, name)
	case http.MethodDelete:
		s.purge(w, r, name)
	case MethodLock:
		s.lock(w, r, name)
	case MethodUnlock:
		s.unlock(w, r, name)
	default:
		methodNotAllowed(w, stateMethods)
	}
}

// parsePath splits /state/<name> or /state/<name>/lock. found is false for
// paths of any other shape; err is set for an invalid name.
func parsePath(u *url.URL) (name string, isLockPath, found bool, err error) {
	rest, ok := strings.CutPrefix(u.EscapedPath(), statePrefix)
	if !ok {
		return "", false, false, nil
	}
	segments := strings.Split(rest, "/")
	switch {
	case len(segments) == 1:
	case len(segments) == 2 && segments[1] == lockSegment:
		isLockPath = true
	default:
		return "", false, false, nil
	}
	name, err = url.PathUnescape(segments[0])
	if err != nil {
		return "", false, true, fmt.Errorf("%w: %w", ErrInvalidName, err)
	}
	return name, isLockPath, true, validateName(name)
}

// validateName rejects names that cannot be a single, safe path segment.
func validateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidName)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	case len(name) > maxNameBytes:
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidName, maxNameBytes)
	}
	for _, c := range []byte(name) {
		if c == '/' || c == '\\' || c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: %q contains a slash or a control character", ErrInvalidName, name)
		}
	}
	return nil
}

func methodNotAllowed(w http.ResponseWriter, allowed string) {
	w.Header().Set("Allow", allowed)
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
}

// conflictError is returned from inside a Store.Update to refuse a request
// because of the lock: the answer is status with the holder's LockInfo, a
// plain text, or no body.
type conflictError struct {
	status int
	holder []byte // sent as JSON; nil when there is no holder
	text   string // sent as plain text when holder is nil
}

func (e *conflictError) Error() string {
	return fmt.Sprintf("lock conflict (%d)", e.status)
}

// storeError answers an error from the store or from a conflict: the
// conflict answer, 400 for an invalid name, 507 when the store is full
// (ErrStoreFull), else 500.
func (s *Server) storeError(w http.ResponseWriter, r *http.Request, err error) {
	var conflict *conflictError
	switch {
	case errors.As(err, &conflict):
		switch {
		case conflict.holder != nil:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(conflict.status)
			_, _ = w.Write(conflict.holder)
		case conflict.text != "":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(conflict.status)
			_, _ = io.WriteString(w, conflict.text)
		default:
			w.WriteHeader(conflict.status)
		}
	case errors.Is(err, ErrInvalidName):
		http.Error(w, err.Error(), http.StatusBadRequest)
	case errors.Is(err, ErrStoreFull):
		s.logger.WarnContext(r.Context(), "store full", "method", r.Method, "path", r.URL.Path, "err", err)
		http.Error(w, "insufficient storage: "+err.Error(), http.StatusInsufficientStorage)
	default:
		s.logger.ErrorContext(r.Context(), "store failed", "method", r.Method, "path", r.URL.Path, "err", err)
		http.Error(w, "internal server error", http.StatusInternalServerError)
	}
}
