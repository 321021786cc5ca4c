package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// gitlabTF is mainTF's outputs behind GitLab's backend settings: lock and
// unlock at <address>/lock with POST and DELETE, the user ci-bot (its
// token comes from TF_HTTP_PASSWORD). %[1]q is the state address.
const gitlabTF = `terraform {
  backend "http" {
    address        = %[1]q
    lock_address   = "%[1]s/lock"
    unlock_address = "%[1]s/lock"
    lock_method    = "POST"
    unlock_method  = "DELETE"
    username       = "ci-bot"
  }
}

variable "n" {
  type    = number
  default = 1
}

output "number" {
  value = var.n
}
`

// TestTerraformGitLab drives the real terraform and tofu against the
// stateserver binary in GitLab mode: init, apply and plan waiting under
// -lock-timeout for another holder's lock, versions kept by serial, and
// force-unlock, where terraform's empty body releases whatever lock is
// held but tofu's ID body only the named one.
func TestTerraformGitLab(t *testing.T) {
	runners := testtools.Runners(t)
	const token = "glpat-terraform-test"
	for _, runner := range runners {
		t.Run(runner.Name, func(t *testing.T) {
			t.Parallel()
			srv := startServerProcess(t, []string{"--listen", "127.0.0.1:0", "--gitlab", "--username", "ci-bot"}, "STATESERVER_PASSWORD="+token)
			const statePath = "/api/v4/projects/7/terraform/state/stack"
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "main.tf"), fmt.Appendf(nil, gitlabTF, srv.url+statePath), 0o600); err != nil {
				t.Fatal(err)
			}
			w := &testtools.Workdir{Bin: runner.Path, Dir: dir, Env: append(testtools.TerraformEnv(t, dir), "TF_HTTP_PASSWORD="+token)}
			c := newDirectClient(t, srv.url, nil)
			c.user, c.pass = "ci-bot", token
			exerciseGitLab(t, runner, w, c, statePath)
		})
	}
}

// exerciseGitLab runs the scenario of TestTerraformGitLab with c holding
// locks on statePath directly.
func exerciseGitLab(t *testing.T, runner testtools.Runner, w *testtools.Workdir, c *directClient, statePath string) {
	t.Helper()
	lockPath := statePath + "/lock"
	w.MustRun(t, "init", "-input=false", "-no-color")
	w.MustRun(t, "apply", "-auto-approve", "-input=false", "-no-color")
	first := parseState(t, w.MustRun(t, "state", "pull"))

	const holder = "5d0c8a35-held-by-the-test"
	if status, body := c.do(http.MethodPost, lockPath, lockInfo(holder)); status != http.StatusOK {
		t.Fatalf("LOCK: %d %s", status, body)
	}
	out, err := w.Run(t, "apply", "-auto-approve", "-input=false", "-no-color", "-var", "n=2")
	if err == nil || !strings.Contains(out, "ID="+holder) {
		t.Fatalf("apply while locked: %v, want a failure quoting ID=%s:\n%s", err, holder, out)
	}
	for _, command := range [][]string{
		{"plan", "-input=false", "-no-color", "-lock-timeout=30s", "-var", "n=3"},
		{"apply", "-auto-approve", "-input=false", "-no-color", "-lock-timeout=30s", "-var", "n=3"},
	} {
		const wait = 2 * time.Second
		released := make(chan string, 1)
		start := time.Now()
		go func() {
			time.Sleep(wait)
			status, body, err := c.try(http.MethodDelete, lockPath, []byte(`{"ID":"`+holder+`"}`))
			released <- fmt.Sprintf("%d %s %v", status, body, err)
		}()
		w.MustRun(t, command...)
		if elapsed := time.Since(start); elapsed < wait {
			t.Errorf("%s finished after %v, before the lock was released at %v", command[0], elapsed, wait)
		}
		if got := <-released; !strings.HasPrefix(got, "200 200 ") {
			t.Errorf("DELETE of the test's lock: %s, want 200", got)
		}
		if command[0] == "plan" {
			if status, body := c.do(http.MethodPost, lockPath, lockInfo(holder)); status != http.StatusOK {
				t.Fatalf("LOCK again: %d %s", status, body)
			}
		}
	}
	after := parseState(t, w.MustRun(t, "state", "pull"))
	if after.Serial <= first.Serial || after.Outputs["number"].Value != 3.0 {
		t.Errorf("after the waiting apply: serial %d, number %v; want > %d and 3", after.Serial, after.Outputs["number"].Value, first.Serial)
	}
	if status, body := c.do(http.MethodGet, fmt.Sprintf("%s/versions/%d", statePath, first.Serial), nil); status != http.StatusOK ||
		parseState(t, body).Outputs["number"].Value != 1.0 {
		t.Errorf("GET of the first version: %d %s, want 200 with number 1", status, body)
	}
	forceUnlocks(t, runner, w, c, lockPath)
}

// forceUnlocks checks what each runner's force-unlock releases on GitLab:
// the named lock; and, named wrongly, with terraform's empty body,
// whatever lock is held, but with tofu's ID body nothing.
func forceUnlocks(t *testing.T, runner testtools.Runner, w *testtools.Workdir, c *directClient, lockPath string) {
	t.Helper()
	type outcome struct {
		Named, WrongID bool // the force-unlock succeeded
		LockedAfter    bool // the stuck lock was still held after the wrong one
	}
	var got outcome
	const stuck = "0f7e2b9c-stuck"
	for i, id := range []string{stuck, "not-the-holder"} {
		if status, body := c.do(http.MethodPost, lockPath, lockInfo(stuck)); status != http.StatusOK {
			t.Fatalf("LOCK %d: %d %s", i, status, body)
		}
		_, err := w.Run(t, "force-unlock", "-force", "-no-color", id)
		if i == 0 {
			got.Named = err == nil
			continue
		}
		got.WrongID = err == nil
		status, _ := c.do(http.MethodPost, lockPath, lockInfo("probe"))
		got.LockedAfter = status == http.StatusConflict
		if status == http.StatusOK {
			c.do(http.MethodDelete, lockPath, []byte(`{"ID":"probe"}`))
		}
	}
	c.do(http.MethodDelete, lockPath, []byte(`{"ID":"`+stuck+`"}`))
	want := map[string]outcome{
		"terraform": {Named: true, WrongID: true},
		"tofu":      {Named: true, LockedAfter: true},
	}[runner.Name]
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s force-unlock on GitLab (-want +got):\n%s", runner.Name, diff)
	}
}
