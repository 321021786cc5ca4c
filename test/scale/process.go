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
	// stopTimeout and quitGrace are stop's waits (the constants when
	// zero).
	stopTimeout, quitGrace time.Duration
}

// stopTimeout is how long a process may take to exit after a signal:
// Kubernetes' default grace period.
const stopTimeout = 30 * time.Second

// quitGrace is how long a process that did not exit in time gets to
// print its goroutines after SIGQUIT, before SIGKILL.
const quitGrace = 5 * time.Second

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

// stop sends sig and waits for the process to exit, at most stopTimeout,
// and returns how long it took. After SIGTERM the process must exit
// cleanly; after SIGKILL it is dead by definition. One still running
// then gets SIGQUIT, on which a Go program prints the stack of every
// goroutine to its output (the log the harness keeps: what it waits for),
// and SIGKILL after quitGrace.
func (p *process) stop(sig syscall.Signal) (time.Duration, error) {
	if !p.running() {
		return 0, fmt.Errorf("%s had already exited: %w", p.name, p.err)
	}
	timeout, grace := p.stopTimeout, p.quitGrace
	if timeout == 0 {
		timeout = stopTimeout
	}
	if grace == 0 {
		grace = quitGrace
	}
	start := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		return 0, fmt.Errorf("signalling %s: %w", p.name, err)
	}
	select {
	case <-p.exited:
	case <-time.After(timeout):
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.exited:
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		return time.Since(start), fmt.Errorf("%s still running %s after %s (its goroutines, printed on SIGQUIT, end its log)", p.name, formatSeconds(timeout), sig)
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
