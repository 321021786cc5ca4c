package stateserver

import (
	"bytes"
	"crypto/md5" //nolint:gosec // the protocol's checksum, not a security control
	"encoding/base64"
	"errors"
	"hash"
	"io"
	"net/http"
)

const (
	// maxStateBytes bounds state documents; larger bodies get 413.
	maxStateBytes = 128 << 20
	// maxLockInfoBytes bounds LOCK and UNLOCK bodies, which are read into
	// memory: a LockInfo is a few hundred bytes.
	maxLockInfoBytes = 64 << 10
)

// bodyReader reads a request body up to a limit, hashes what it reads for
// the Content-MD5 check, and remembers the first read error, so that a
// failure of the client can be told from a failure of the store.
type bodyReader struct {
	body io.Reader
	hash hash.Hash
	err  error
}

func newBodyReader(w http.ResponseWriter, r *http.Request, limit int64) *bodyReader {
	return &bodyReader{body: http.MaxBytesReader(w, r.Body, limit), hash: md5.New()} //nolint:gosec // protocol checksum
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.hash.Write(p[:n])
	if err != nil && !errors.Is(err, io.EOF) && b.err == nil {
		b.err = err
	}
	return n, err
}

// matches reports whether what was read has the MD5 sum want; a nil want
// (no Content-MD5 header) always matches.
func (b *bodyReader) matches(want []byte) bool {
	return want == nil || bytes.Equal(b.hash.Sum(nil), want)
}

// startBody checks what can be checked before reading a body: the
// Content-MD5 header (returned decoded, nil when absent) and a declared
// length over limit. On failure it has answered (400 or 413) and ok is false.
func startBody(w http.ResponseWriter, r *http.Request, limit int64) (wantMD5 []byte, ok bool) {
	if r.ContentLength > limit {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return nil, false
	}
	raw := r.Header.Get("Content-MD5")
	if raw == "" {
		return nil, true
	}
	want, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(want) != md5.Size {
		http.Error(w, "malformed Content-MD5 header", http.StatusBadRequest)
		return nil, false
	}
	return want, true
}

// bodyFailed answers a failure to read the body: 413 past the limit, else
// 400.
func bodyFailed(w http.ResponseWriter, err error) {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	http.Error(w, "reading request body failed", http.StatusBadRequest)
}

// receiveState streams the request body into a Document staged by the
// store, checking its size and Content-MD5 as it goes. On failure it has
// answered and ok is false; on success the caller must Close the Document.
func (s *Server) receiveState(w http.ResponseWriter, r *http.Request) (doc Document, ok bool) {
	want, ok := startBody(w, r, maxStateBytes)
	if !ok {
		return nil, false
	}
	body := newBodyReader(w, r, maxStateBytes)
	doc, err := s.store.Stage(body)
	if err != nil {
		if body.err != nil {
			bodyFailed(w, body.err)
			return nil, false
		}
		s.storeError(w, r, err)
		return nil, false
	}
	if !body.matches(want) {
		s.discard(r, doc)
		http.Error(w, "Content-MD5 does not match the body", http.StatusBadRequest)
		return nil, false
	}
	return doc, true
}

// readLockInfo reads a LOCK or UNLOCK body into memory and checks its
// Content-MD5. On failure it has answered (400 or 413) and ok is false.
func readLockInfo(w http.ResponseWriter, r *http.Request) (body []byte, ok bool) {
	want, ok := startBody(w, r, maxLockInfoBytes)
	if !ok {
		return nil, false
	}
	reader := newBodyReader(w, r, maxLockInfoBytes)
	body, err := io.ReadAll(reader)
	if err != nil {
		bodyFailed(w, err)
		return nil, false
	}
	if !reader.matches(want) {
		http.Error(w, "Content-MD5 does not match the body", http.StatusBadRequest)
		return nil, false
	}
	return body, true
}

// discard closes a Document the server is done with, logging a failure
// (such as a temporary file that could not be removed).
func (s *Server) discard(r *http.Request, doc Document) {
	if err := doc.Close(); err != nil {
		s.logger.ErrorContext(r.Context(), "releasing a state document failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
}
