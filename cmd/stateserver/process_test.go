package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// binary is the stateserver command built once for the tests that run it as
// a separate process.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// serverBinary builds cmd/stateserver (once per test binary) and returns its
// path.
func serverBinary(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		binary.dir, binary.err = os.MkdirTemp("", "stateserver-test-") //nolint:usetesting // shared by every test of the binary and removed by TestMain; t.TempDir would go with the first test
		if binary.err != nil {
			return
		}
		// go test puts $GOROOT/bin first in PATH.
		goBin, err := exec.LookPath("go")
		if err != nil {
			binary.err = err
			return
		}
		path := filepath.Join(binary.dir, "stateserver")
		out, err := exec.CommandContext(t.Context(), goBin, "build", "-o", path, ".").CombinedOutput()
		if err != nil {
			binary.err = errors.New("go build: " + err.Error() + "\n" + string(out))
			return
		}
		binary.path = path
	})
	if binary.err != nil {
		t.Fatalf("building the stateserver binary: %v", binary.err)
	}
	return binary.path
}

// serverProcess is a running stateserver binary.
type serverProcess struct {
	url  string                // scheme://127.0.0.1:port from its "listening on" line
	logs *testtools.SyncBuffer // its stderr

	cmd    *exec.Cmd
	exited chan error // receives the exit status once
	killed bool
}

// kill stops the process with SIGKILL, as a crash would, and waits for it to
// exit. The end of the test then expects nothing more of it.
func (p *serverProcess) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("killing stateserver: %v", err)
	}
	select {
	case err := <-p.exited:
		// A killed process exits with an *exec.ExitError; anything else
		// means it was gone before the kill.
		if _, ok := errors.AsType[*exec.ExitError](err); !ok {
			t.Fatalf("stateserver exited with %v, want killed by SIGKILL", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("stateserver still running 30s after SIGKILL")
	}
	p.killed = true
}

// startServerProcess runs the stateserver binary with args and env (on top of
// PATH only) until the end of the test, then stops it with SIGTERM and checks
// that it shuts down cleanly (unless the test killed it).
func startServerProcess(t *testing.T, args []string, env ...string) *serverProcess {
	t.Helper()
	cmd := exec.Command(serverBinary(t), args...) //nolint:noctx // the cleanup stops it with SIGTERM and checks the shutdown; a context would kill it first
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting stateserver: %v", err)
	}
	p := &serverProcess{logs: &testtools.SyncBuffer{}, cmd: cmd, exited: make(chan error, 1)}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			_, _ = p.logs.Write(append(s.Bytes(), '\n'))
		}
	}()
	go func() {
		<-copied
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if p.killed {
			return
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("signalling stateserver: %v", err)
		}
		select {
		case err := <-p.exited:
			if err != nil {
				t.Errorf("stateserver exited with %v after SIGTERM; its log:\n%s", err, p.logs)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("stateserver still running 30s after SIGTERM; its log:\n%s", p.logs)
		}
		if t.Failed() {
			t.Logf("stateserver log:\n%s", p.logs)
		}
	})
	p.url = waitForURL(t, p.logs, copied)
	return p
}
