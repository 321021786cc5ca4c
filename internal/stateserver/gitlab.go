package stateserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// GitLab's managed Terraform state, emulated from its source (gitlab-org's
// lib/api/terraform/state.rb, lib/api/terraform/state_version.rb and
// app/services/terraform/remote_state_handler.rb):
//
//	/api/v4/projects/<id>/terraform/state/<name>                  GET, POST, DELETE
//	/api/v4/projects/<id>/terraform/state/<name>/lock             POST (lock), DELETE (unlock)
//	/api/v4/projects/<id>/terraform/state/<name>/versions/<serial> GET, DELETE
//
// A client points Terraform at it with lock_method POST and unlock_method
// DELETE, the lock and unlock addresses at <address>/lock, a user name and
// an access token as password.

// GitLabRole is a project role of a [GitLabUser]: what the user may do with
// the project's states.
type GitLabRole int

const (
	// GitLabMaintainer may read, lock, unlock, write and delete states.
	GitLabMaintainer GitLabRole = iota
	// GitLabDeveloper may read states and their versions; locking,
	// unlocking, writing and deleting get 403.
	GitLabDeveloper
)

// GitLabUser is a user of the emulated GitLab: a name, the access token it
// authenticates with, and its role in every project.
type GitLabUser struct {
	// Name is the user name, which conflicts show as the holder's Who.
	Name string
	// Token is the access token, sent as the basic auth password (the
	// basic auth username is not checked, as GitLab does not check it
	// for a token).
	Token string
	// Role is what the user may do.
	Role GitLabRole
}

// WithGitLab makes the server GitLab's managed Terraform state, for these
// users: GitLab's routes (the /state/ routes are no longer served), its
// authentication (a request whose basic auth password is no user's token
// gets 401; WithBasicAuth is not used) and its answers:
//
//   - LOCK (POST <address>/lock) needs all seven LockInfo keys as strings
//     (400 otherwise) and answers 200, or 409 while the state is locked,
//     under the holder's ID too. Both answers are JSON whose ID is the
//     holder's, Who the holder's user name and Created the server's lock
//     time, but whose Operation, Info, Version and Path are the request's.
//   - UNLOCK (DELETE <address>/lock) reads only the ID, from a JSON body,
//     else from the ID query parameter: the holder's ID releases (200, body
//     200); another ID, or an ID while unlocked, gets 409 with body 409; no
//     ID at all releases any lock (200).
//   - LOCK, UNLOCK and a write of a state that does not exist create it: a
//     GET then answers 204 (no content) instead of 404.
//   - A write (POST) while locked needs ?ID=<holder> (500 otherwise, as for
//     any ID while unlocked); an empty body gets 204 and changes nothing; a
//     body's top-level serial already stored gets 422. Every version is
//     kept by serial, and GET answers the highest.
//   - DELETE of the state removes it and its versions, and does nothing
//     (still 200) while it is locked.
//   - <address>/versions/<serial>: GET a version (404 when unknown), DELETE
//     it (204).
//   - [GitLabDeveloper] users get 403 on everything but GET.
//
// Project IDs are numbers; names are one path segment. Faults, request
// counting and the logger work as in the other modes; the options of
// modes.go and WithUnlockBodies have no effect.
func WithGitLab(users ...GitLabUser) Option {
	return func(s *Server) {
		g := &gitlabMode{}
		for _, u := range users {
			g.users = append(g.users, gitlabUser{name: u.Name, token: sha256.Sum256([]byte(u.Token)), role: u.Role})
		}
		s.gitlab = g
	}
}

// gitlabMode is the configuration and the per-state mutexes of the GitLab
// mode.
type gitlabMode struct {
	users []gitlabUser
	// names serializes the requests on one state, which span several
	// store records (the state and its versions).
	names nameLocks
}

// gitlabUser is a GitLabUser with its token digested, so that comparisons
// take the same time whatever the lengths involved.
type gitlabUser struct {
	name  string
	token [sha256.Size]byte
	role  GitLabRole
}

// gitlabPrefix starts every path of the GitLab mode.
const gitlabPrefix = "/api/v4/projects/"

// gitlabRef names one GitLab state.
type gitlabRef struct {
	project, name string
}

// gitlabServe authenticates the request and serves GitLab's routes.
func (s *Server) gitlabServe(w http.ResponseWriter, r *http.Request) {
	user, ok := s.gitlab.authenticate(r)
	if !ok {
		gitlabMessage(w, http.StatusUnauthorized, "401 Unauthorized")
		return
	}
	ref, rest, found, err := parseGitLabPath(r.URL)
	switch {
	case !found:
		gitlabMessage(w, http.StatusNotFound, "404 Not Found")
		return
	case err != nil:
		gitlabBadRequest(w, err.Error())
		return
	}
	// A LOCK's parameters are validated before the role is checked (see
	// gitlabLock); every other change is refused to a reader at once.
	isLock := rest == lockSegment && r.Method == http.MethodPost
	if r.Method != http.MethodGet && user.role != GitLabMaintainer && !isLock {
		gitlabMessage(w, http.StatusForbidden, "403 Forbidden")
		return
	}
	switch rest {
	case "":
		s.gitlabState(w, r, ref)
	case lockSegment:
		s.gitlabLockRoute(w, r, ref, user)
	default:
		s.gitlabVersion(w, r, ref, strings.TrimPrefix(rest, "versions/"))
	}
}

// authenticate returns the user whose token is the request's basic auth
// password. Every user's token is compared, whatever matches.
func (g *gitlabMode) authenticate(r *http.Request) (gitlabUser, bool) {
	_, pass, ok := r.BasicAuth()
	if !ok {
		return gitlabUser{}, false
	}
	digest := sha256.Sum256([]byte(pass))
	var found gitlabUser
	matched := 0
	for _, u := range g.users {
		if subtle.ConstantTimeCompare(digest[:], u.token[:]) == 1 {
			found, matched = u, 1
		}
	}
	return found, matched == 1
}

// parseGitLabPath splits a GitLab state path into the state and what
// follows its name: "", "lock" or "versions/<serial>". found is false for
// paths of any other shape; err is set for an invalid name.
func parseGitLabPath(u *url.URL) (ref gitlabRef, rest string, found bool, err error) {
	path, ok := strings.CutPrefix(u.EscapedPath(), gitlabPrefix)
	if !ok {
		return gitlabRef{}, "", false, nil
	}
	segments := strings.Split(path, "/")
	if len(segments) < 4 || segments[1] != "terraform" || segments[2] != "state" || !isDigits(segments[0]) {
		return gitlabRef{}, "", false, nil
	}
	switch tail := segments[4:]; {
	case len(tail) == 0:
	case len(tail) == 1 && tail[0] == lockSegment:
		rest = lockSegment
	case len(tail) == 2 && tail[0] == "versions":
		rest = "versions/" + tail[1]
	default:
		return gitlabRef{}, "", false, nil
	}
	name, err := url.PathUnescape(segments[3])
	if err == nil {
		err = validateName(name)
	}
	return gitlabRef{project: segments[0], name: name}, rest, true, err
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	_, err := strconv.ParseUint(s, 10, 63)
	return err == nil
}

// gitlabState serves <address>: GET, POST and DELETE.
func (s *Server) gitlabState(w http.ResponseWriter, r *http.Request, ref gitlabRef) {
	switch r.Method {
	case http.MethodGet:
		s.gitlabGet(w, r, ref)
	case http.MethodPost:
		s.gitlabWrite(w, r, ref)
	case http.MethodDelete:
		s.gitlabDelete(w, r, ref)
	default:
		methodNotAllowed(w, "GET, POST, DELETE")
	}
}

// gitlabLockRoute serves <address>/lock: POST locks, DELETE unlocks.
func (s *Server) gitlabLockRoute(w http.ResponseWriter, r *http.Request, ref gitlabRef, user gitlabUser) {
	switch r.Method {
	case http.MethodPost:
		s.gitlabLock(w, r, ref, user)
	case http.MethodDelete:
		s.gitlabUnlock(w, r, ref)
	default:
		methodNotAllowed(w, "POST, DELETE")
	}
}

// gitlabMessage answers status with GitLab's {"message": ...} body.
func gitlabMessage(w http.ResponseWriter, status int, message string) {
	gitlabJSON(w, status, map[string]string{"message": message})
}

// gitlabBadRequest answers 400 with the {"error": ...} body of GitLab's
// parameter validation.
func gitlabBadRequest(w http.ResponseWriter, message string) {
	gitlabJSON(w, http.StatusBadRequest, map[string]string{"error": message})
}

// gitlabJSON answers status with v as JSON.
func gitlabJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal server error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
