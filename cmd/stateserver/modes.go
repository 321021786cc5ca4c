package main

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/infrastate/backend-operator/internal/stateserver"
)

// The flags choosing how the server answers the lock protocol, like the
// servers people run (see the stateserver package's modes.go), or as
// GitLab does.
var (
	conflictAnswers = map[string]stateserver.ConflictAnswer{
		"holder-423": stateserver.ConflictHolder423,
		"holder-409": stateserver.ConflictHolder409,
		"text-409":   stateserver.ConflictText409,
		"text-423":   stateserver.ConflictText423,
	}
	unlockChecks = map[string]stateserver.UnlockCheck{
		"checks-id":    stateserver.UnlockChecksID,
		"ignores-body": stateserver.UnlockIgnoresBody,
		"exact-body":   stateserver.UnlockExactBody,
	}
	unlockBodies = map[string]stateserver.UnlockBodies{
		"any":   stateserver.AcceptAnyUnlock,
		"empty": stateserver.AcceptEmptyUnlock,
		"id":    stateserver.AcceptIDUnlock,
		"none":  stateserver.AcceptNoForceUnlock,
	}
	gitlabRoles = map[string]stateserver.GitLabRole{
		"maintainer": stateserver.GitLabMaintainer,
		"developer":  stateserver.GitLabDeveloper,
	}
)

// modeFlags are the flags of the lock behaviours, as given.
type modeFlags struct {
	conflict, unlock, unlockBodies string
	reentrantLock                  bool
	gitlab                         bool
	gitlabRole                     string
}

// lockModeFlags are the flags that --gitlab replaces.
var lockModeFlags = []string{"conflict", "unlock", "unlock-bodies", "reentrant-lock"}

// register defines the flags on fs.
func (m *modeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.conflict, "conflict", "holder-423", "how a lock conflict is answered: "+names(conflictAnswers))
	fs.StringVar(&m.unlock, "unlock", "checks-id", "which UNLOCK releases the lock: "+names(unlockChecks))
	fs.StringVar(&m.unlockBodies, "unlock-bodies", "any", "which force unlock bodies are accepted: "+names(unlockBodies)+
		" (the ID-only body, the empty body, both or neither)")
	fs.BoolVar(&m.reentrantLock, "reentrant-lock", false, "answer 200 to a LOCK under the ID that holds the lock")
	fs.BoolVar(&m.gitlab, "gitlab", false, "serve GitLab's managed Terraform state at /api/v4/projects/<id>/terraform/state/<name>, "+
		"for the user --username whose access token is $"+passwordEnv)
	fs.StringVar(&m.gitlabRole, "gitlab-role", "maintainer", "the --gitlab user's role: "+names(gitlabRoles)+" (reads only)")
}

// options checks the flags, set is the set of flags given on the command
// line, and returns the server options they choose. username and password
// are the GitLab user's name and token with --gitlab.
func (m modeFlags) options(set map[string]bool, username, password string) ([]stateserver.Option, error) {
	if m.gitlab {
		for _, name := range lockModeFlags {
			if set[name] {
				return nil, fmt.Errorf("%w: --%s has no effect with --gitlab", errUsage, name)
			}
		}
		role, ok := gitlabRoles[m.gitlabRole]
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: --gitlab-role %q is not one of %s", errUsage, m.gitlabRole, names(gitlabRoles))
		case username == "":
			return nil, fmt.Errorf("%w: --gitlab needs --username and $%s (the user's access token)", errUsage, passwordEnv)
		}
		return []stateserver.Option{stateserver.WithGitLab(stateserver.GitLabUser{Name: username, Token: password, Role: role})}, nil
	}
	if set["gitlab-role"] {
		return nil, fmt.Errorf("%w: --gitlab-role needs --gitlab", errUsage)
	}
	conflict, err := lookup("conflict", m.conflict, conflictAnswers)
	if err != nil {
		return nil, err
	}
	unlock, err := lookup("unlock", m.unlock, unlockChecks)
	if err != nil {
		return nil, err
	}
	bodies, err := lookup("unlock-bodies", m.unlockBodies, unlockBodies)
	if err != nil {
		return nil, err
	}
	opts := []stateserver.Option{
		stateserver.WithConflictAnswer(conflict),
		stateserver.WithUnlockCheck(unlock),
		stateserver.WithUnlockBodies(bodies),
	}
	if m.reentrantLock {
		opts = append(opts, stateserver.WithReentrantLock())
	}
	return opts, nil
}

// describe names the mode for the "listening" log line.
func (m modeFlags) describe() string {
	if m.gitlab {
		return "gitlab/" + m.gitlabRole
	}
	parts := []string{"conflict=" + m.conflict, "unlock=" + m.unlock, "unlock-bodies=" + m.unlockBodies}
	if m.reentrantLock {
		parts = append(parts, "reentrant-lock")
	}
	return strings.Join(parts, ",")
}

func lookup[T any](flagName, value string, values map[string]T) (T, error) {
	v, ok := values[value]
	if !ok {
		return v, fmt.Errorf("%w: --%s %q is not one of %s", errUsage, flagName, value, names(values))
	}
	return v, nil
}

// names lists the keys of values, sorted, separated by "|".
func names[T any](values map[string]T) string {
	return strings.Join(slices.Sorted(maps.Keys(values)), "|")
}
