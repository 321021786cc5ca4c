package stateclient

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/infrastate/backend-operator/internal/stateserver"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// TestEmptyUnlockLikeTerraform runs the real `terraform force-unlock`
// against a recording server and checks that ForceUnlockEmptyBody sends
// the same UNLOCK: method, body, Content-Type and Content-MD5.
func TestEmptyUnlockLikeTerraform(t *testing.T) {
	t.Parallel()
	bin := testtools.Terraform(t)
	srv := newServer(t, respond(http.StatusOK, ""))
	dir := t.TempDir()
	mainTF := fmt.Sprintf(`terraform {
  backend "http" {
    address        = "%[1]s/state"
    lock_address   = "%[1]s/state/lock"
    unlock_address = "%[1]s/state/lock"
  }
}
`, srv.URL)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(mainTF), 0o600); err != nil {
		t.Fatal(err)
	}
	w := testtools.Workdir{Bin: bin, Dir: dir, Env: testtools.TerraformEnv(t, dir)}
	w.MustRun(t, "init", "-input=false", "-no-color")
	w.MustRun(t, "force-unlock", "-force", "-no-color", "some-lock-id")
	terraform := unlocksOf(srv.requests())

	if err := mustNew(t, fastConfig(srv.URL)).ForceUnlockEmptyBody(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	ours := unlocksOf(srv.requests())[len(terraform):]
	if len(terraform) != 1 || len(ours) != 1 {
		t.Fatalf("terraform sent %d UNLOCKs and the client %d, want one each", len(terraform), len(ours))
	}
	ignore := cmpopts.IgnoreFields(request{}, "At", "Auth")
	if diff := cmp.Diff(terraform[0], ours[0], ignore); diff != "" {
		t.Errorf("the client's empty-body UNLOCK differs from terraform's (-terraform +client):\n%s", diff)
	}
}

// unlocksOf returns the UNLOCK requests of reqs.
func unlocksOf(reqs []request) []request {
	var out []request
	for _, r := range reqs {
		if r.Method == "UNLOCK" {
			out = append(out, r)
		}
	}
	return out
}

// TestUnlockWithBody checks that UnlockWithBody sends its body byte for
// byte, so that a server releasing only on the exact LockInfo releases,
// and that it forgets the client's lock only when the body named it or
// was empty.
func TestUnlockWithBody(t *testing.T) {
	t.Parallel()
	_, base := referenceServer(t, stateserver.NewMemoryStore(), stateserver.WithUnlockCheck(stateserver.UnlockExactBody))
	ctx := ctxT(t)
	c := mustNew(t, referenceConfig(base, "exact", false))
	info := NewLockInfo("OperationTypeApply", "me")
	exact, err := info.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lock(ctx, info); err != nil {
		t.Fatal(err)
	}
	respaced := append([]byte(" "), exact...)
	var lockErr *LockError
	if err := c.UnlockWithBody(ctx, respaced); !errors.As(err, &lockErr) || lockErr.StatusCode != http.StatusConflict {
		t.Fatalf("UnlockWithBody(respaced) = %v, want a 409 *LockError", err)
	}
	if diff := cmp.Diff(respaced, lockErr.HolderJSON()); diff != "" {
		t.Errorf("the refusal echoes the request, not the holder (-want +got):\n%s", diff)
	}
	if err := c.UnlockWithBody(ctx, []byte("not json")); !errors.As(err, &lockErr) {
		t.Fatalf("UnlockWithBody(not json) = %v, want a *LockError", err)
	}
	if got := c.heldLockID(); got != info.ID {
		t.Errorf("held lock after refused unlocks = %q, want %q", got, info.ID)
	}
	if err := c.UnlockWithBody(ctx, exact); err != nil {
		t.Fatalf("UnlockWithBody(exact) = %v", err)
	}
	if got := c.heldLockID(); got != "" {
		t.Errorf("held lock after the release = %q, want none", got)
	}

	cfg := referenceConfig(base, "exact", false)
	cfg.UnlockAddress = ""
	if err := mustNew(t, cfg).UnlockWithBody(ctx, exact); !errors.Is(err, ErrUnlockDisabled) {
		t.Errorf("without an unlock address: %v, want ErrUnlockDisabled", err)
	}
}

// TestHolderJSON checks that a conflict's holder comes back byte for byte
// when it is a LockInfo without the client's secrets, and not otherwise.
func TestHolderJSON(t *testing.T) {
	t.Parallel()
	const password = "hunter2-password"
	holder := `{"ID":"h","Operation":"OperationTypeApply","Info":"","Who":"a@b","Version":"1.5.7","Created":"2026-01-02T03:04:05.1Z","Path":""}`
	echoing := `{"ID":"h","Operation":"","Info":"` + password + `","Who":"","Version":"","Created":"0001-01-01T00:00:00Z","Path":""}`
	cases := map[string]struct {
		body string
		want []byte
	}{
		"a holder":              {body: holder, want: []byte(holder)},
		"a holder with spacing": {body: " " + holder + "\n", want: []byte(" " + holder + "\n")},
		"an echoed password":    {body: echoing},
		"plain text":            {body: "Conflict"},
		"no body":               {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, respond(http.StatusLocked, tc.body))
			cfg := fastConfig(srv.URL)
			cfg.Username, cfg.Password = "u", password
			_, err := mustNew(t, cfg).Lock(ctxT(t), NewLockInfo("OperationTypeApply", "me"))
			var lockErr *LockError
			if !errors.As(err, &lockErr) {
				t.Fatalf("Lock = %v, want a *LockError", err)
			}
			if diff := cmp.Diff(tc.want, lockErr.HolderJSON()); diff != "" {
				t.Errorf("HolderJSON (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFetchStatus checks that FetchStatus tells a state a server does not
// know (404) from one a LOCK created (GitLab's 204), and reports refused
// credentials.
func TestFetchStatus(t *testing.T) {
	t.Parallel()
	_, base := referenceServer(t, stateserver.NewMemoryStore(), stateserver.WithGitLab(stateserver.GitLabUser{Name: "ci", Token: "token"}))
	ctx := ctxT(t)
	cfg := fastConfig(base)
	cfg.Address = base + "/api/v4/projects/1/terraform/state/s"
	cfg.LockAddress, cfg.UnlockAddress = cfg.Address+"/lock", cfg.Address+"/lock"
	cfg.LockMethod, cfg.UnlockMethod = http.MethodPost, http.MethodDelete
	cfg.Username, cfg.Password = "ci", "token"
	c := mustNew(t, cfg)
	var got []int
	status, err := c.FetchStatus(ctx)
	got = append(got, status)
	if err == nil {
		_, err = c.Lock(ctx, NewLockInfo("OperationTypeApply", "me"))
	}
	if err == nil {
		status, err = c.FetchStatus(ctx)
		got = append(got, status)
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{http.StatusNotFound, http.StatusNoContent}, got); diff != "" {
		t.Errorf("statuses before and after the LOCK (-want +got):\n%s", diff)
	}
	cfg.Password = "wrong"
	if _, err := mustNew(t, cfg).FetchStatus(ctx); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("with a wrong token: %v, want ErrUnauthorized", err)
	}
}
