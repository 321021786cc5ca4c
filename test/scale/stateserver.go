package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// stateServer is the cmd/stateserver process every backend points at.
// It logs one line per request it serves ("msg=request ... status=404"),
// which the harness counts: the probes the operator sent.
type stateServer struct {
	*process
	// url is http://127.0.0.1:PORT, from its "listening on" line.
	url string
	// requests counts the requests served; failures those answered
	// with 401, 403 or 5xx (a wrong password, or a broken server).
	requests, failures atomic.Int64
}

// listeningOn matches the state server's line naming its address.
var listeningOn = regexp.MustCompile(`listening on (http://[^\s"]+)`)

// startStateServer runs the state server binary on a free port of
// 127.0.0.1 with basic auth (stateUser, statePassword) and its states in
// dataDir, and returns once it listens. Its lines other than request
// lines go to logPath.
func startStateServer(bin, dataDir, logPath string) (*stateServer, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the state server's log: %w", err)
	}
	pr, pw := io.Pipe()
	p, err := startProcess("stateserver", bin,
		[]string{"--listen", "127.0.0.1:0", "--data-dir", dataDir, "--username", stateUser},
		[]string{"STATESERVER_PASSWORD=" + statePassword}, pw)
	if err != nil {
		_ = logFile.Close()
		return nil, err
	}
	s := &stateServer{process: p}
	found := make(chan string, 1)
	go func() {
		defer func() { _ = logFile.Close() }()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if status, ok := requestStatus(line); ok {
				s.requests.Add(1)
				if status == 401 || status == 403 || status >= 500 {
					s.failures.Add(1)
				}
				continue
			}
			if m := listeningOn.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
			_, _ = fmt.Fprintln(logFile, line)
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		<-p.exited
		_ = pw.Close()
	}()
	select {
	case s.url = <-found:
		return s, nil
	case <-p.exited:
		return nil, fmt.Errorf("the state server exited before listening, see %s: %w", logPath, exitError(p.err))
	case <-time.After(30 * time.Second):
		_, _ = p.stop(syscall.SIGKILL)
		return nil, fmt.Errorf("the state server did not listen within 30s: see %s", logPath)
	}
}

// requestStatus reads the status of a state server request line
// (`level=INFO msg=request method=GET path=/state/x status=404 ...`);
// ok is false for other lines.
func requestStatus(line string) (int, bool) {
	if !strings.Contains(line, " msg=request ") {
		return 0, false
	}
	_, rest, ok := strings.Cut(line, " status=")
	if !ok {
		return 0, true
	}
	num, _, _ := strings.Cut(rest, " ")
	status, err := strconv.Atoi(num)
	if err != nil {
		return 0, true
	}
	return status, true
}

// stateDataDir is the state server's data directory under dir.
func stateDataDir(dir string) string { return filepath.Join(dir, "states") }
