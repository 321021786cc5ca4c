package stateserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// gitlabLockKeys are the LockInfo keys GitLab's LOCK requires, in the
// order its parameter validation names them.
var gitlabLockKeys = []string{"ID", "Operation", "Info", "Who", "Version", "Created", "Path"}

// gitlabHolder is the lock of a GitLab state as GitLab stores it: the
// requester's lock ID, and the user and the time of the server.
type gitlabHolder struct {
	ID      string `json:"ID"`
	Who     string `json:"Who"`
	Created string `json:"Created"`
}

// gitlabLockAnswer is the body of GitLab's answers to LOCK, in its key
// order: the request's Operation, Info, Version and Path, and the holder's
// ID, user name and lock time.
type gitlabLockAnswer struct {
	Operation string `json:"Operation"`
	Info      string `json:"Info"`
	Version   string `json:"Version"`
	Path      string `json:"Path"`
	ID        string `json:"ID"`
	Who       string `json:"Who"`
	Created   string `json:"Created"`
}

// gitlabTimeFormat is how Rails writes a time in JSON: milliseconds, UTC.
const gitlabTimeFormat = "2006-01-02T15:04:05.000Z07:00"

// gitlabLock takes the lock of a state, creating the state when it does
// not exist. The answer is 200, or 409 while the state is locked by anyone
// (the requester's own ID included), with the holder's ID, user and time
// and the request's other fields.
func (s *Server) gitlabLock(w http.ResponseWriter, r *http.Request, ref gitlabRef, user gitlabUser) {
	body, ok := readLockInfo(w, r)
	if !ok {
		return
	}
	fields, problem := gitlabLockParams(body)
	if problem != "" {
		gitlabBadRequest(w, problem)
		return
	}
	if user.role != GitLabMaintainer {
		gitlabMessage(w, http.StatusForbidden, "403 Forbidden")
		return
	}
	if fields["ID"] == "" {
		// remote_state_handler.rb's lock! raises ArgumentError on a blank ID.
		gitlabMessage(w, http.StatusInternalServerError, "500 Internal Server Error")
		return
	}
	unlock := s.gitlab.names.lock(gitlabMetaName(ref))
	defer unlock()
	status := http.StatusOK
	var holder gitlabHolder
	err := s.updateGitLabMeta(ref, func(m *gitlabMeta) error {
		if m.lock != nil {
			status, holder = http.StatusConflict, *m.lock
			return nil
		}
		holder = gitlabHolder{ID: fields["ID"], Who: user.name, Created: time.Now().UTC().Format(gitlabTimeFormat)}
		m.lock = &holder
		return nil
	})
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	gitlabJSON(w, status, gitlabLockAnswer{
		Operation: fields["Operation"], Info: fields["Info"], Version: fields["Version"], Path: fields["Path"],
		ID: holder.ID, Who: holder.Who, Created: holder.Created,
	})
}

// gitlabLockParams reads the seven LockInfo keys of a LOCK body. problem
// is GitLab's validation message when one is missing or not a string, or
// the body is not a JSON object.
func gitlabLockParams(body []byte) (fields map[string]string, problem string) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, "the body is not a JSON object"
	}
	fields = map[string]string{}
	var problems []string
	for _, key := range gitlabLockKeys {
		v, ok := raw[key]
		if !ok || string(v) == "null" {
			problems = append(problems, key+" is missing")
			continue
		}
		var str string
		if json.Unmarshal(v, &str) != nil {
			problems = append(problems, key+" is invalid")
			continue
		}
		fields[key] = str
	}
	return fields, strings.Join(problems, ", ")
}

// gitlabUnlock releases the lock of a state, creating the state when it
// does not exist. It reads only the ID: from a JSON body, else from the ID
// query parameter. The holder's ID releases (200, body 200); another ID, or
// an ID while unlocked, gets 409 (body 409); no ID at all releases any lock
// (200), as `terraform force-unlock` needs.
func (s *Server) gitlabUnlock(w http.ResponseWriter, r *http.Request, ref gitlabRef) {
	body, ok := readLockInfo(w, r)
	if !ok {
		return
	}
	id, named, ok := gitlabUnlockID(r, body)
	if !ok {
		gitlabBadRequest(w, "the body is not a JSON object")
		return
	}
	unlock := s.gitlab.names.lock(gitlabMetaName(ref))
	defer unlock()
	status := http.StatusOK
	var released *gitlabHolder
	err := s.updateGitLabMeta(ref, func(m *gitlabMeta) error {
		var held string
		if m.lock != nil {
			held = m.lock.ID
		}
		if named && held != id {
			status = http.StatusConflict
			return nil
		}
		released, m.lock = m.lock, nil
		return nil
	})
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	if released != nil && !named {
		s.logForceUnlock(r, released.ID, released.Who)
	}
	gitlabJSON(w, status, status)
}

// gitlabUnlockID returns the ID an UNLOCK names: the body's ID when the
// body is a JSON object holding one, else the ID query parameter. named is
// false when neither is there; ok is false for a body that is not JSON.
func gitlabUnlockID(r *http.Request, body []byte) (id string, named, ok bool) {
	if len(bytes.TrimSpace(body)) > 0 {
		var params struct {
			ID *string `json:"ID"`
		}
		if json.Unmarshal(body, &params) != nil {
			return "", false, false
		}
		if params.ID != nil {
			return *params.ID, true, true
		}
	}
	if q := r.URL.Query(); q.Has("ID") {
		return q.Get("ID"), true, true
	}
	return "", false, true
}
