package stateserver

import (
	"crypto/md5" //nolint:gosec // the protocol's checksum, not a security control
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// get answers the state document, or 404 when there is none. The document
// is read twice from the store's snapshot, once for its Content-MD5 and once
// to send it, so that no copy of it is held in memory.
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
	defer s.discard(r, rec.State)
	size := rec.State.Size()
	sum := md5.New() //nolint:gosec // protocol checksum
	if _, err := io.Copy(sum, io.NewSectionReader(rec.State, 0, size)); err != nil {
		s.storeError(w, r, fmt.Errorf("reading the state: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-MD5", base64.StdEncoding.EncodeToString(sum.Sum(nil)))
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	// A failure here is the client going away; the answer has started.
	_, _ = io.Copy(w, io.NewSectionReader(rec.State, 0, size))
}

// update stores the body as the state document. The body is staged first
// (streamed to a temporary file by the directory store) and installed only
// when complete and checked. While the state is locked the request must carry
// the holder's ID query parameter, else it gets the conflict answer of a
// refused LOCK (423 with the holder's LockInfo by default) and nothing
// changes. A stale ID while unlocked is accepted.
func (s *Server) update(w http.ResponseWriter, r *http.Request, name string) {
	doc, ok := s.receiveState(w, r)
	if !ok {
		return
	}
	defer s.discard(r, doc)
	id := r.URL.Query().Get("ID")
	err := s.store.Update(name, func(rec *Record) error {
		if err := s.requireHolder(rec.Lock, id); err != nil {
			return err
		}
		rec.State = doc
		return nil
	})
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// purge deletes the state document, if any, and answers 200. Like an update,
// it is refused with the conflict answer while the state is locked,
// unless it carries the holder's ID query parameter; the lock itself is kept.
// Terraform never deletes an http state, so this only stops other clients
// from removing a state under a running apply.
func (s *Server) purge(w http.ResponseWriter, r *http.Request, name string) {
	id := r.URL.Query().Get("ID")
	err := s.store.Update(name, func(rec *Record) error {
		if err := s.requireHolder(rec.Lock, id); err != nil {
			return err
		}
		rec.State = nil
		return nil
	})
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}
