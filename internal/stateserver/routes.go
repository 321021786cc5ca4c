package stateserver

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

const (
	// MethodLock and MethodUnlock are the default lock and unlock methods
	// of Terraform's http backend.
	MethodLock   = "LOCK"
	MethodUnlock = "UNLOCK"

	// statePrefix starts every path the server serves.
	statePrefix = "/state/"
	// lockSegment ends the alternative lock path /state/<name>/lock.
	lockSegment = "lock"
	// maxNameBytes bounds state names.
	maxNameBytes = 200
	// maxBodyBytes bounds request bodies; larger ones get 413.
	maxBodyBytes = 128 << 20
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

// get answers the state document, or 404 when there is none.
func (s *Server) get(w http.ResponseWriter, r *http.Request, name string) {
	rec, err := s.store.Load(name)
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	if rec.State == nil {
		http.Error(w, "no state", http.StatusNotFound)
		return
	}
	sum := md5.Sum(rec.State)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
	w.Header().Set("Content-Length", strconv.Itoa(len(rec.State)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(rec.State)
}

// update stores the body as the state document. While the state is locked
// the request must carry the holder's ID query parameter, else it gets 423
// with the holder's LockInfo. A stale ID while unlocked is accepted.
func (s *Server) update(w http.ResponseWriter, r *http.Request, name string) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	id := r.URL.Query().Get("ID")
	err := s.store.Update(name, func(rec *Record) error {
		if rec.Lock != nil {
			if holder, ok := holderID(rec.Lock); !ok || holder != id {
				return &conflictError{status: http.StatusLocked, holder: rec.Lock}
			}
		}
		rec.State = body
		return nil
	})
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// purge deletes the state document, if any, and answers 200 either way. The
// lock, if held, is kept: Terraform's DELETE carries no lock ID.
func (s *Server) purge(w http.ResponseWriter, r *http.Request, name string) {
	err := s.store.Update(name, func(rec *Record) error {
		rec.State = nil
		return nil
	})
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// readBody reads the whole request body and checks its Content-MD5 header
// when present. On failure it has answered (400 or 413) and ok is false.
func readBody(w http.ResponseWriter, r *http.Request) (body []byte, ok bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return nil, false
		}
		http.Error(w, "reading request body failed", http.StatusBadRequest)
		return nil, false
	}
	if raw := r.Header.Get("Content-MD5"); raw != "" {
		want, err := base64.StdEncoding.DecodeString(raw)
		if err != nil || len(want) != md5.Size {
			http.Error(w, "malformed Content-MD5 header", http.StatusBadRequest)
			return nil, false
		}
		got := md5.Sum(body)
		if !bytes.Equal(got[:], want) {
			http.Error(w, "Content-MD5 does not match the body", http.StatusBadRequest)
			return nil, false
		}
	}
	return body, true
}

// conflictError is returned from inside a Store.Update to refuse a request
// because of the lock: the answer is status with the holder's LockInfo.
type conflictError struct {
	status int
	holder []byte // nil when there is no holder
}

func (e *conflictError) Error() string {
	return fmt.Sprintf("lock conflict (%d)", e.status)
}

// storeError answers an error from the store or from a conflict.
func (s *Server) storeError(w http.ResponseWriter, r *http.Request, err error) {
	var conflict *conflictError
	switch {
	case errors.As(err, &conflict):
		if conflict.holder == nil {
			w.WriteHeader(conflict.status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(conflict.status)
		_, _ = w.Write(conflict.holder)
	case errors.Is(err, ErrInvalidName):
		http.Error(w, err.Error(), http.StatusBadRequest)
	default:
		s.logger.ErrorContext(r.Context(), "store failed", "method", r.Method, "path", r.URL.Path, "err", err)
		http.Error(w, "internal server error", http.StatusInternalServerError)
	}
}
