// Package scripts tests the hack/ scripts that build the tools into the
// cache outside the repository: they run, here, against a cache of their
// own in a temporary directory, and build nothing.
package scripts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/infrastate/backend-operator/internal/testenv"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// TestBuildsWaitForAnotherBuildsLock runs each build script while another
// process holds the script's lock and the binaries are missing, as when
// make run and make test (or two suites under make -j) start together. The
// script must say what it waits for, wait, and then find the binaries the
// other build put in place instead of building them again into the same
// scratch files.
func TestBuildsWaitForAnotherBuildsLock(t *testing.T) {
	k8sVersion, toolVersion := "1.36.3", "1.5.7"
	platform := runtime.GOOS + "-" + runtime.GOARCH
	cases := map[string]struct {
		script string
		args   []string
		// env points the script at the cache root.
		env func(root string) []string
		// lock is the lock file under the cache root.
		lock string
		// outputs are the binaries the other build writes, under the root.
		outputs []string
		// waiting is what the script says while it waits.
		waiting string
	}{
		"setup-envtest.sh: the control plane": {
			script: "setup-envtest.sh",
			env: func(root string) []string {
				return []string{"ENVTEST_CACHE_DIR=" + root, "ENVTEST_K8S_VERSION=" + k8sVersion}
			},
			lock:    ".envtest-" + k8sVersion + "-" + platform + ".lock",
			outputs: []string{"k8s/" + k8sVersion + "-" + platform + "/kube-apiserver", "k8s/" + k8sVersion + "-" + platform + "/etcd"},
			waiting: "waiting for another build of the control plane",
		},
		"install-tools.sh: terraform": {
			script: "install-tools.sh",
			args:   []string{"terraform"},
			env: func(root string) []string {
				return []string{"INFRASTATE_TOOLS_DIR=" + root, "TERRAFORM_VERSION=" + toolVersion}
			},
			lock:    ".terraform-" + toolVersion + ".lock",
			outputs: []string{"terraform-" + toolVersion + "/terraform"},
			waiting: "waiting for another build of terraform-" + toolVersion,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			release := holdLock(t, filepath.Join(root, tc.lock))

			var stdout, stderr testtools.SyncBuffer
			cmd := exec.CommandContext(t.Context(), filepath.Join(testenv.RepoRoot(), "hack", tc.script), tc.args...)
			cmd.Env = append(withoutEnv(os.Environ(), "KUBEBUILDER_ASSETS"), tc.env(root)...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			})

			if !eventually(func() bool { return strings.Contains(stderr.String(), tc.waiting) }, 30*time.Second) {
				t.Fatalf("the script did not say it waits for the other build; stderr:\n%s", stderr.String())
			}
			select {
			case err := <-done:
				t.Fatalf("the script ended (%v) while another build held the lock; stderr:\n%s", err, stderr.String())
			case <-time.After(500 * time.Millisecond):
			}

			// The other build finishes: its binaries are in place, and it
			// releases the lock.
			var want string
			for _, out := range tc.outputs {
				path := filepath.Join(root, out)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				want = filepath.Dir(path)
			}
			release()

			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("the script failed after the lock was released: %v; stderr:\n%s", err, stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the script still runs after the lock was released; stderr:\n%s", stderr.String())
			}
			if strings.Contains(stderr.String(), "building") {
				t.Errorf("the script built again what the other build had built; stderr:\n%s", stderr.String())
			}
			got := strings.TrimSpace(stdout.String())
			if tc.script == "install-tools.sh" {
				want = filepath.Join(want, "terraform")
			}
			if resolved, err := filepath.EvalSymlinks(want); err == nil {
				want = resolved
			}
			if got != want {
				t.Errorf("the script printed %q, want %q", got, want)
			}
		})
	}
}

// holdLock takes an exclusive flock on path, as the scripts' flock does,
// and returns the function that releases it.
func holdLock(t *testing.T, path string) func() {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(fmt.Errorf("locking %s: %w", path, err))
	}
	var once sync.Once
	release := func() { once.Do(func() { _ = f.Close() }) }
	t.Cleanup(release)
	return release
}

// withoutEnv is env without the variable name.
func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// eventually polls cond until it holds or d has passed.
func eventually(cond func() bool, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
