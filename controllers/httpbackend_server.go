package controllers

import (
	"net/url"
	"regexp"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/conformance"
	"github.com/infrastate/backend-operator/internal/render"
)

// What an HttpBackend's state server was seen to do with the operator's
// own lock (status.server), and what each lock feature may do there
// (conformance.Decide). The functions of this file are pure and
// table-tested.

// serverCheckInputs are what status.server was learned with: the
// addresses, the lock methods and the credentials. A change of any makes
// the check run again; a change of another setting does not.
func serverCheckInputs(spec backendsv1alpha1.HttpBackendSpec, secrets render.HTTPSecrets) string {
	return fingerprint([]byte(spec.Address), []byte(spec.LockAddress), []byte(spec.LockMethod),
		[]byte(spec.UnlockAddress), []byte(spec.UnlockMethod), []byte(spec.UpdateMethod), []byte(spec.Username),
		secrets.Password, secrets.ClientCertificatePEM, secrets.ClientPrivateKeyPEM, secrets.ClientCACertificatePEM)
}

// knownServer is the behaviour status.server records when it was learned
// with checkedWith, the current inputs (see serverCheckInputs); not ok
// when it was never learned or with other inputs.
func knownServer(status *backendsv1alpha1.ServerBehaviour, checkedWith string) (conformance.Behaviour, bool) {
	if status == nil || status.CheckedWith != checkedWith {
		return conformance.Behaviour{}, false
	}
	return behaviourOf(status), true
}

// behaviourOf is the behaviour status.server records, whatever inputs it
// was learned with.
func behaviourOf(status *backendsv1alpha1.ServerBehaviour) conformance.Behaviour {
	b := conformance.Behaviour{
		LocksExclusive:    status.LocksExclusive,
		ConflictStatus:    int(status.ConflictStatus),
		HolderInConflicts: status.HolderInConflicts,
		HolderVerbatim:    status.HolderVerbatim,
		ReentrantLock:     status.ReentrantLock,
		UnlockChecksID:    status.UnlockChecksID,
		UnlockIgnoresBody: status.UnlockIgnoresBody,
		LockCreatesState:  status.LockCreatesState,
	}
	if len(status.ConflictFields) > 0 {
		b.ConflictFields = map[string]conformance.FieldSource{}
		for k, v := range status.ConflictFields {
			b.ConflictFields[k] = conformance.FieldSource(v)
		}
	}
	for _, body := range status.UnlockBodies {
		b.UnlockBodies = append(b.UnlockBodies, conformance.UnlockBody(body))
	}
	if len(status.UnlockStatuses) > 0 {
		b.UnlockStatuses = map[conformance.UnlockBody]int{}
		for k, v := range status.UnlockStatuses {
			b.UnlockStatuses[conformance.UnlockBody(k)] = int(v)
		}
	}
	return b
}

// serverStatus is status.server for b, learned with checkedWith at at.
func serverStatus(b conformance.Behaviour, checkedWith string, at time.Time) *backendsv1alpha1.ServerBehaviour {
	s := &backendsv1alpha1.ServerBehaviour{
		LocksExclusive:    b.LocksExclusive,
		ConflictStatus:    int32(min(max(b.ConflictStatus, 0), 599)),
		HolderInConflicts: b.HolderInConflicts,
		HolderVerbatim:    b.HolderVerbatim,
		ReentrantLock:     b.ReentrantLock,
		UnlockChecksID:    b.UnlockChecksID,
		UnlockIgnoresBody: b.UnlockIgnoresBody,
		LockCreatesState:  b.LockCreatesState,
		CheckedAt:         metav1.NewTime(at),
		CheckedWith:       checkedWith,
	}
	if len(b.ConflictFields) > 0 {
		s.ConflictFields = map[string]backendsv1alpha1.ConflictFieldSource{}
		for _, key := range conformance.LockInfoKeys {
			if src, ok := b.ConflictFields[key]; ok {
				s.ConflictFields[key] = backendsv1alpha1.ConflictFieldSource(src)
			}
		}
	}
	for _, body := range b.UnlockBodies {
		s.UnlockBodies = append(s.UnlockBodies, backendsv1alpha1.UnlockBody(body))
	}
	if len(b.UnlockStatuses) > 0 {
		s.UnlockStatuses = map[backendsv1alpha1.UnlockBody]int32{}
		for _, body := range []conformance.UnlockBody{conformance.BodyExact, conformance.BodyID, conformance.BodyEmpty} {
			if status, ok := b.UnlockStatuses[body]; ok {
				s.UnlockStatuses[backendsv1alpha1.UnlockBody(body)] = int32(min(max(status, 0), 599))
			}
		}
	}
	return s
}

// gitlabStatePath matches the path of a GitLab managed Terraform state:
// /api/v4/projects/<id or path>/terraform/state/<name>, under any prefix
// (a GitLab served under a relative URL).
var gitlabStatePath = regexp.MustCompile(`/api/v4/projects/[^/]+/terraform/state/[^/]+/?$`)

// mayCreateOnLock reports whether a LOCK may create the state at address
// when it does not exist, before the server's behaviour is learned: a
// GitLab managed state's address, where it does (lib/api/terraform/state.rb
// in gitlab-org/gitlab). Elsewhere the learned behaviour tells (see
// conformance.Behaviour.LockCreatesState).
func mayCreateOnLock(address string) bool {
	u, err := url.Parse(address)
	return err == nil && gitlabStatePath.MatchString(u.EscapedPath())
}
