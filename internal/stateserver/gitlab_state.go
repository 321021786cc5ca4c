package stateserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
)

// A GitLab state is kept in the store as one record for the state (its
// list of versions as the document, its lock as the lock) and one record
// per version. The prefixes keep the two kinds apart, and the project ID
// and serial, digits only, end at the first dot after them.
const (
	gitlabMetaPrefix    = "gitlab-state."
	gitlabVersionPrefix = "gitlab-version."
)

func gitlabMetaName(ref gitlabRef) string {
	return gitlabMetaPrefix + ref.project + "." + ref.name
}

func gitlabVersionName(ref gitlabRef, serial int64) string {
	return gitlabVersionPrefix + ref.project + "." + strconv.FormatInt(serial, 10) + "." + ref.name
}

// gitlabMeta is what the store keeps of a GitLab state besides its
// versions.
type gitlabMeta struct {
	// exists is false for a state GitLab does not know; set it to create
	// the state, clear it to delete it.
	exists bool
	// serials are the serials of the stored versions, ascending.
	serials []int64
	lock    *gitlabHolder
}

// latest is the highest serial stored; ok is false when there is none.
func (m gitlabMeta) latest() (serial int64, ok bool) {
	if len(m.serials) == 0 {
		return 0, false
	}
	return m.serials[len(m.serials)-1], true
}

// gitlabMetaDoc is the document of a GitLab state's record.
type gitlabMetaDoc struct {
	Serials []int64 `json:"serials"`
}

// loadGitLabMeta reads the record of a GitLab state. The caller holds the
// state's mutex (gitlabMode.names).
func (s *Server) loadGitLabMeta(ref gitlabRef) (gitlabMeta, error) {
	rec, err := s.store.Load(gitlabMetaName(ref))
	if err != nil {
		return gitlabMeta{}, err
	}
	var m gitlabMeta
	if rec.State != nil {
		defer func() { _ = rec.State.Close() }()
		var doc gitlabMetaDoc
		if err := json.NewDecoder(io.NewSectionReader(rec.State, 0, rec.State.Size())).Decode(&doc); err != nil {
			return gitlabMeta{}, fmt.Errorf("reading the record of GitLab state %q: %w", ref.name, err)
		}
		m.exists, m.serials = true, doc.Serials
	}
	if rec.Lock != nil {
		m.lock = &gitlabHolder{}
		if err := json.Unmarshal(rec.Lock, m.lock); err != nil {
			return gitlabMeta{}, fmt.Errorf("reading the lock of GitLab state %q: %w", ref.name, err)
		}
	}
	return m, nil
}

// updateGitLabMeta reads the record of a GitLab state, creating the state
// when it does not exist (as every change does in GitLab), lets fn change
// it, and writes it back, or removes it when fn cleared exists. An error
// of fn is returned as is and nothing is written. The caller holds the
// state's mutex.
func (s *Server) updateGitLabMeta(ref gitlabRef, fn func(*gitlabMeta) error) error {
	m, err := s.loadGitLabMeta(ref)
	if err != nil {
		return err
	}
	m.exists = true
	if err := fn(&m); err != nil {
		return err
	}
	var doc Document
	var lock []byte
	if m.exists {
		if doc, err = s.stageJSON(gitlabMetaDoc{Serials: m.serials}); err != nil {
			return err
		}
		defer func() { _ = doc.Close() }()
		if m.lock != nil {
			if lock, err = json.Marshal(m.lock); err != nil {
				return fmt.Errorf("encoding the lock: %w", err)
			}
		}
	}
	return s.store.Update(gitlabMetaName(ref), func(rec *Record) error {
		rec.State, rec.Lock = doc, lock
		return nil
	})
}

// stageJSON stages v's JSON as a document of the store.
func (s *Server) stageJSON(v any) (Document, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding a record: %w", err)
	}
	return s.store.Stage(bytes.NewReader(b))
}

// errGitLabVersionStored refuses a write whose serial is already stored:
// GitLab's unique index answers 422.
var errGitLabVersionStored = errors.New("a version with this serial is already stored")

// findGitLabState takes the mutex of a state and reads its record, as
// GitLab finds a state it must not create. When the state does not exist
// (404) or cannot be read, it has answered and ok is false. The caller
// calls unlock in any case.
func (s *Server) findGitLabState(w http.ResponseWriter, r *http.Request, ref gitlabRef) (m gitlabMeta, unlock func(), ok bool) {
	unlock = s.gitlab.names.lock(gitlabMetaName(ref))
	m, err := s.loadGitLabMeta(ref)
	switch {
	case err != nil:
		s.storeError(w, r, err)
		return m, unlock, false
	case !m.exists:
		gitlabMessage(w, http.StatusNotFound, "404 Not found")
		return m, unlock, false
	}
	return m, unlock, true
}

// gitlabGet answers the latest version of a state: 404 for a state GitLab
// does not know, 204 for one never written (created by a LOCK or UNLOCK).
func (s *Server) gitlabGet(w http.ResponseWriter, r *http.Request, ref gitlabRef) {
	m, unlock, found := s.findGitLabState(w, r, ref)
	defer unlock()
	if !found {
		return
	}
	serial, ok := m.latest()
	if !ok {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	s.get(w, r, gitlabVersionName(ref, serial))
}

// gitlabWrite stores the body as a new version of the state, under the
// serial the body holds. It creates the state first, whatever follows. A
// locked state needs the holder's ID in the ID query parameter, and an
// unlocked one no ID (else 500, GitLab's StateLockedError); a serial
// already stored gets 422; an empty body 204.
func (s *Server) gitlabWrite(w http.ResponseWriter, r *http.Request, ref gitlabRef) {
	doc, ok := s.receiveState(w, r)
	if !ok {
		return
	}
	defer s.discard(r, doc)
	if doc.Size() == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	serial, err := readSerial(doc)
	if err != nil {
		gitlabBadRequest(w, "serial is missing or invalid")
		return
	}
	id := r.URL.Query().Get("ID")
	unlock := s.gitlab.names.lock(gitlabMetaName(ref))
	defer unlock()
	var refused int
	err = s.updateGitLabMeta(ref, func(m *gitlabMeta) error {
		held := ""
		if m.lock != nil {
			held = m.lock.ID
		}
		switch {
		case held != id:
			refused = http.StatusInternalServerError
		case slices.Contains(m.serials, serial):
			refused = http.StatusUnprocessableEntity
		}
		return nil
	})
	if err == nil && refused == 0 {
		err = s.store.Update(gitlabVersionName(ref, serial), func(rec *Record) error {
			rec.State = doc
			return nil
		})
	}
	if err == nil && refused == 0 {
		err = s.updateGitLabMeta(ref, func(m *gitlabMeta) error {
			m.serials = append(m.serials, serial)
			slices.Sort(m.serials)
			return nil
		})
	}
	switch {
	case err != nil:
		s.storeError(w, r, err)
	case refused == http.StatusInternalServerError:
		gitlabMessage(w, refused, "500 Internal Server Error")
	case refused != 0:
		gitlabMessage(w, refused, errGitLabVersionStored.Error())
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// readSerial returns the top-level serial of a state document.
func readSerial(doc Document) (int64, error) {
	dec := json.NewDecoder(io.NewSectionReader(doc, 0, doc.Size()))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return 0, errors.New("not a JSON object")
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return 0, fmt.Errorf("reading a key: %w", err)
		}
		if key != "serial" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return 0, fmt.Errorf("reading a value: %w", err)
			}
			continue
		}
		var n json.Number
		if err := dec.Decode(&n); err != nil {
			return 0, fmt.Errorf("reading the serial: %w", err)
		}
		return n.Int64()
	}
	return 0, errors.New("no serial")
}

// gitlabDelete removes a state and its versions; a locked state is kept,
// and still answered 200, as GitLab's destroy service refuses it without
// the API saying so.
func (s *Server) gitlabDelete(w http.ResponseWriter, r *http.Request, ref gitlabRef) {
	m, unlock, found := s.findGitLabState(w, r, ref)
	defer unlock()
	switch {
	case !found:
		return
	case m.lock != nil:
		w.WriteHeader(http.StatusOK)
		return
	}
	for _, serial := range m.serials {
		if err := s.removeRecord(gitlabVersionName(ref, serial)); err != nil {
			s.storeError(w, r, err)
			return
		}
	}
	if err := s.updateGitLabMeta(ref, func(m *gitlabMeta) error { m.exists = false; return nil }); err != nil {
		s.storeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// gitlabVersion serves <address>/versions/<serial>: GET one version, or
// DELETE it (204).
func (s *Server) gitlabVersion(w http.ResponseWriter, r *http.Request, ref gitlabRef, rawSerial string) {
	if r.Method != http.MethodGet && r.Method != http.MethodDelete {
		methodNotAllowed(w, "GET, DELETE")
		return
	}
	serial, err := strconv.ParseInt(rawSerial, 10, 64)
	if err != nil {
		gitlabBadRequest(w, "serial is invalid")
		return
	}
	m, unlock, found := s.findGitLabState(w, r, ref)
	defer unlock()
	switch {
	case !found:
		return
	case !slices.Contains(m.serials, serial):
		gitlabMessage(w, http.StatusNotFound, "404 Not found")
		return
	case r.Method == http.MethodGet:
		s.get(w, r, gitlabVersionName(ref, serial))
		return
	}
	if err := s.removeRecord(gitlabVersionName(ref, serial)); err != nil {
		s.storeError(w, r, err)
		return
	}
	err = s.updateGitLabMeta(ref, func(m *gitlabMeta) error {
		m.serials = slices.DeleteFunc(m.serials, func(n int64) bool { return n == serial })
		return nil
	})
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// removeRecord removes the record of name from the store.
func (s *Server) removeRecord(name string) error {
	return s.store.Update(name, func(rec *Record) error {
		rec.State, rec.Lock = nil, nil
		return nil
	})
}
