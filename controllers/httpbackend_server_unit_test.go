package controllers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/conformance"
	"github.com/infrastate/backend-operator/internal/render"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/stateserver"
)

func TestMayCreateOnLock(t *testing.T) {
	cases := map[string]bool{
		"https://gitlab.example.com/api/v4/projects/42/terraform/state/production":            true,
		"https://gitlab.example.com/api/v4/projects/group%2Fapp/terraform/state/production":   true,
		"https://example.com/gitlab/api/v4/projects/42/terraform/state/production/":           true,
		"https://gitlab.example.com/api/v4/projects/42/terraform/state/production/lock":       false,
		"https://state.example.com/state/production":                                          false,
		"https://gitlab.example.com/api/v4/projects/42/terraform/state/production?x=/api/v4/": true,
		"://not a url": false,
	}
	for address, want := range cases {
		if got := mayCreateOnLock(address); got != want {
			t.Errorf("mayCreateOnLock(%q) = %v, want %v", address, got, want)
		}
	}
}

// gitlabBackend is an HttpBackend of a state on the GitLab mode of the
// reference server at url, as docs/servers.md configures one.
func gitlabBackend(url string) (backendsv1alpha1.HttpBackendSpec, render.HTTPSecrets) {
	address := url + "/api/v4/projects/42/terraform/state/production"
	spec := backendsv1alpha1.HttpBackendSpec{Address: address, LockAddress: address + "/lock", LockMethod: http.MethodPost,
		UnlockAddress: address + "/lock", UnlockMethod: http.MethodDelete, Username: "platform-bot"}
	return spec, render.HTTPSecrets{Password: []byte("glpat-token")}
}

// TestGitLabLockCheck runs the lock check of an HttpBackend against the
// GitLab mode of the reference server, over TCP, as the probe runs it:
// it never creates the state (a LOCK of a missing state creates it on
// GitLab), and it shows of a holder only what GitLab vouches for (the
// holder's ID, its user as Who, the server's Created), never the fields
// GitLab echoes from the check's own LOCK.
func TestGitLabLockCheck(t *testing.T) {
	ctx := t.Context()
	srv := httptest.NewServer(stateserver.New(stateserver.NewMemoryStore(),
		stateserver.WithGitLab(stateserver.GitLabUser{Name: "platform-bot", Token: "glpat-token", Role: stateserver.GitLabMaintainer},
			stateserver.GitLabUser{Name: "alice", Token: "alice-token", Role: stateserver.GitLabMaintainer})))
	t.Cleanup(srv.Close)
	spec, secrets := gitlabBackend(srv.URL)
	client := func(password string) *stateclient.Client {
		cfg := stateClientConfig(spec, secrets)
		cfg.Password, cfg.RetryMax = password, 0
		sc, err := stateclient.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sc.CloseIdleConnections)
		return sc
	}
	operator := client("glpat-token")
	stateStatus := func() int {
		t.Helper()
		status, err := operator.FetchStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return status
	}
	plan := lockCheckRun("uid-1")
	plan.checkLock, plan.learnServer, plan.learnWhenStateExists = true, true, mayCreateOnLock(spec.Address)

	for range 2 {
		res := runHTTPProbe(ctx, operator, plan, logr.Discard())
		if res.learned != nil || res.lock.skip == nil || res.lock.skip.Reason != backendsv1alpha1.LockNotCheckedReason {
			t.Errorf("probe of a missing state = learned %v, lock %+v; want not checked, and why", res.learned, res.lock)
		}
		if status := stateStatus(); status != http.StatusNotFound {
			t.Fatalf("GET answers %d after the probe, want 404: the probe created the state", status)
		}
	}

	if err := operator.Update(ctx, []byte(`{"version":4,"serial":1,"lineage":"l","outputs":{}}`)); err != nil {
		t.Fatal(err)
	}
	res := runHTTPProbe(ctx, operator, plan, logr.Discard())
	if res.learned == nil || res.lock.held {
		t.Fatalf("probe of a written state = learned %v, lock %+v; want learned, and free", res.learned, res.lock)
	}
	plan.server, plan.learnServer = res.learned, false
	if f := conformance.Decide(*res.learned); !f.LockCheck.SkipWhenStateAbsent {
		t.Errorf("lock check plan %+v, want it skipped while the state is absent", f.LockCheck)
	}

	// alice's run holds the lock.
	alice := stateclient.NewLockInfo("OperationTypeApply", "alice@laptop")
	if _, err := client("alice-token").Lock(ctx, alice); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]httpProbeRun{"learned": plan, "not learned yet": func() httpProbeRun { q := plan; q.server = nil; q.learnServer = true; return q }()} {
		res = runHTTPProbe(ctx, operator, p, logr.Discard())
		h := res.lock.holder
		if !res.lock.held || h == nil {
			t.Fatalf("%s: lock %+v, want alice's lock held", name, res.lock)
		}
		if h.ID != alice.ID || h.Who != "alice" || h.Created == nil || h.Operation != "" || h.Info != "" || h.Version != "" || h.Path != "" {
			t.Errorf("%s: holder %+v, want alice's ID, Who alice (her GitLab user) and Created only: the rest is the check's own LOCK echoed", name, h)
		}
	}

	// lockPolicy.releaseWhenHolderGone: Who is a GitLab user, never a Pod.
	// No Pod is read (the check has no reader), and the note says why.
	plan.holder = &holderCheck{namespace: "team-a", grace: time.Minute, clock: clock.RealClock{}}
	res = runHTTPProbe(ctx, operator, plan, logr.Discard())
	note := holderNote(res.lock.sighting, time.Minute)
	if res.lock.released || res.lock.sighting.state != holderPolicyUnsupported || !strings.Contains(note, "Who of its own") {
		t.Errorf("lockPolicy on GitLab: lock %+v, note %q; want the lock left alone, saying the server's Who names no Pod", res.lock, note)
	}
}

// TestHolderOfOnAnUncheckedServer checks the holder a conflict shows on a
// server not checked yet, wherever the conflict answers (the probe's lock
// check, a StateLock's LOCK or UNLOCK): the fields equal to the request's
// own are dropped, as GitLab echoes them, the others kept.
func TestHolderOfOnAnUncheckedServer(t *testing.T) {
	sent := stateclient.NewLockInfo("OperationTypeInvalid", "backend-operator/team-a/freeze")
	sent.Info = "release freeze"
	echoed := &stateclient.LockInfo{ID: "alice-1", Operation: sent.Operation, Info: sent.Info, Who: "alice", Created: slockNow}
	got := holderOf(&stateclient.LockError{StatusCode: http.StatusConflict, Info: echoed}, conformance.Unchecked().LockCheck, sent)
	created := metav1.NewTime(slockNow)
	want := &backendsv1alpha1.LockInfo{ID: "alice-1", Who: "alice", Created: &created}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("holderOf (-want +got):\n%s", diff)
	}
}
