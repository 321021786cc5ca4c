package stateserver

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"reflect"
)

// lockInfoID is the part of Terraform's LockInfo the server reads; the rest
// is stored and returned verbatim.
type lockInfoID struct {
	ID string `json:"ID"`
}

// holderID returns the ID of a stored LockInfo. ok is false when it cannot be
// read, in which case the lock must be treated as held by someone else.
func holderID(lock []byte) (id string, ok bool) {
	var info lockInfoID
	if err := json.Unmarshal(lock, &info); err != nil || info.ID == "" {
		return "", false
	}
	return info.ID, true
}

// holderWho returns the Who of a stored LockInfo (who took the lock, such as
// user@host), or "" when it cannot be read.
func holderWho(lock []byte) string {
	var info struct {
		Who string `json:"Who"`
	}
	if json.Unmarshal(lock, &info) != nil {
		return ""
	}
	return info.Who
}

// requireHolder refuses, with the conflict answer of a refused LOCK and the
// holder's LockInfo, a change to a locked state by a request whose ID
// query parameter is not the holder's.
func (s *Server) requireHolder(lock []byte, id string) error {
	if lock == nil {
		return nil
	}
	if holder, ok := holderID(lock); !ok || holder != id {
		return s.conflictAnswer(s.lockStatus(), lock)
	}
	return nil
}

// errUnlockBodyDiffers refuses, with 400, an UNLOCK whose body is not the
// LockInfo stored at lock time, on a server that accepts only that body
// (AcceptEmptyUnlock, AcceptNoForceUnlock).
var errUnlockBodyDiffers = &conflictError{status: http.StatusBadRequest}

// sameJSON reports whether a and b hold the same JSON value, whatever
// their spacing and key order.
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// lock takes the lock of name. The body must be a LockInfo JSON object with a
// non-empty ID (else 400). While unlocked the body is stored and the answer is
// 200; while locked, by anyone, the answer is the conflict answer of
// [WithConflictAnswer] (423 with the holder's LockInfo by default), except
// that with [WithReentrantLock] a LOCK under the holder's own ID gets 200
// and changes nothing.
func (s *Server) lock(w http.ResponseWriter, r *http.Request, name string) {
	body, ok := readLockInfo(w, r)
	if !ok {
		return
	}
	id, ok := holderID(body)
	if !ok {
		http.Error(w, "the body must be a LockInfo JSON object with a non-empty ID", http.StatusBadRequest)
		return
	}
	err := s.store.Update(name, func(rec *Record) error {
		if rec.Lock != nil {
			if holder, ok := holderID(rec.Lock); ok && holder == id && s.reentrant {
				return nil
			}
			return s.conflictAnswer(s.lockStatus(), rec.Lock)
		}
		rec.Lock = body
		return nil
	})
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// unlock releases the lock of name and answers 200 with the released
// LockInfo.
//
// The body is the LockInfo sent at lock time (Terraform), or a LockInfo
// holding at least the ID (OpenTofu's force-unlock); an ID other than the
// holder's gets 409 with the holder's LockInfo. An empty body is a force
// unlock, as `terraform force-unlock` sends from a new process: it releases
// whatever lock is held, and logs a warning naming the holder it released
// (its ID and Who). Unlocking an unlocked state gets 409 with an empty body.
// A non-empty body that is not a LockInfo with an ID gets 400. With
// [WithUnlockBodies] the server refuses some of these bodies, and with
// [WithUnlockCheck] it checks the body otherwise (see modes.go), as other
// servers do.
func (s *Server) unlock(w http.ResponseWriter, r *http.Request, name string) {
	body, ok := readLockInfo(w, r)
	if !ok {
		return
	}
	if s.unlockCheck == UnlockExactBody {
		s.unlockExact(w, r, name, body)
		return
	}
	force := len(bytes.TrimSpace(body)) == 0
	if force && (s.unlockBodies == AcceptIDUnlock || s.unlockBodies == AcceptNoForceUnlock) {
		http.Error(w, "an empty unlock body is not supported", http.StatusInternalServerError)
		return
	}
	exact := s.unlockBodies == AcceptEmptyUnlock || s.unlockBodies == AcceptNoForceUnlock
	var id string
	if !force {
		if id, ok = holderID(body); !ok {
			http.Error(w, "the body must be empty (force unlock) or a LockInfo JSON object with a non-empty ID", http.StatusBadRequest)
			return
		}
	}
	var released []byte
	err := s.store.Update(name, func(rec *Record) error {
		if rec.Lock == nil {
			return &conflictError{status: http.StatusConflict}
		}
		if !force {
			holder, ok := holderID(rec.Lock)
			if s.unlockCheck == UnlockChecksID && (!ok || holder != id) {
				return s.conflictAnswer(http.StatusConflict, rec.Lock)
			}
			if exact && !sameJSON(body, rec.Lock) {
				return errUnlockBodyDiffers
			}
		}
		released, rec.Lock = rec.Lock, nil
		return nil
	})
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	s.answerUnlock(w, r, id, released)
}

// unlockExact releases the lock of name only when body is a byte-identical
// copy of the stored LockInfo ([UnlockExactBody]); anything else gets 409
// echoing body.
func (s *Server) unlockExact(w http.ResponseWriter, r *http.Request, name string, body []byte) {
	var released []byte
	err := s.store.Update(name, func(rec *Record) error {
		if rec.Lock == nil || !bytes.Equal(body, rec.Lock) {
			if len(body) == 0 {
				return &conflictError{status: http.StatusConflict}
			}
			return &conflictError{status: http.StatusConflict, holder: body}
		}
		released, rec.Lock = rec.Lock, nil
		return nil
	})
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	id, _ := holderID(body)
	s.answerUnlock(w, r, id, released)
}

// answerUnlock answers 200 with the released LockInfo, and logs a warning
// naming the holder when the UNLOCK did not name it (id, "" for an empty
// body): a force unlock, or a server that ignores UNLOCK bodies.
func (s *Server) answerUnlock(w http.ResponseWriter, r *http.Request, id string, released []byte) {
	if holder, _ := holderID(released); holder != id || id == "" {
		s.logForceUnlock(r, holder, holderWho(released))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(released)
}

// logForceUnlock warns that an UNLOCK released the lock of holder id, who,
// without naming it.
func (s *Server) logForceUnlock(r *http.Request, id, who string) {
	s.logger.LogAttrs(r.Context(), slog.LevelWarn, "force unlock released a lock",
		slog.String("path", r.URL.Path),
		slog.String("holder_id", id),
		slog.String("holder_who", who))
}
