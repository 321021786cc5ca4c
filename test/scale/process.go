package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// process is a child process of the harness.
type process struct {
	name    string
	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{}
	err     error // set when exited is closed
}

// startProcess starts path with args and exactly env (plus PATH), its
// output going to out. The child gets SIGKILL if the harness dies.
func startProcess(name, path string, args, env []string, out io.Writer) (*process, error) {
	p := &process{name: name, exited: make(chan struct{})}
	p.cmd = exec.Command(path, args...) //nolint:noctx // stopped by signal, see stop; a context would only SIGKILL it
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	setParentDeathSignal(p.cmd)
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// exitError is the error a process exited with, or an error saying it
// exited cleanly.
func exitError(err error) error {
	if err == nil {
		return errors.New("exited with status 0")
	}
	return err
}

// pid returns the process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// running reports whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends sig and waits for the process to exit, at most 30 seconds
// (then it is killed), and returns how long it took. After SIGTERM the
// process must exit cleanly; after SIGKILL it is dead by definition.
func (p *process) stop(sig syscall.Signal) (time.Duration, error) {
	if !p.running() {
		return 0, fmt.Errorf("%s had already exited: %w", p.name, p.err)
	}
	start := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		return 0, fmt.Errorf("signalling %s: %w", p.name, err)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return time.Since(start), fmt.Errorf("%s still running 30s after %s", p.name, sig)
	}
	took := time.Since(start)
	if sig == syscall.SIGKILL {
		return took, nil
	}
	if p.err != nil {
		return took, fmt.Errorf("%s exited badly after %s: %w", p.name, sig, p.err)
	}
	return took, nil
}
