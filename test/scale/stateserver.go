package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// stateServer is the cmd/stateserver process every backend points at.
// It logs one line per request it serves ("msg=request method=GET
// path=/state/x status=404"), which the harness counts: the probes the
// operator sent, by batch, and what each state path got (see
// lockTraffic).
type stateServer struct {
	*process
	// url is http://127.0.0.1:PORT, from its "listening on" line.
	url string
	// failures counts the requests answered with 401, 403 or 5xx (a
	// wrong password, or a broken server).
	failures atomic.Int64

	mu sync.Mutex
	// served counts the requests served by the batch of the backend
	// whose state they were for (see batchOfStatePath).
	served probeCounts
	// traffic counts the requests on each state path by what they did to
	// its lock.
	traffic map[string]lockTraffic
}

// probeCounts counts state server requests by batch prefix ("burst",
// "kill", ...; "" for paths of no batch).
type probeCounts map[string]int64

// total sums the counts.
func (p probeCounts) total() int64 {
	var n int64
	for _, v := range p {
		n += v
	}
	return n
}

// minus returns p minus q, per batch.
func (p probeCounts) minus(q probeCounts) probeCounts {
	out := probeCounts{}
	for k, v := range p {
		if d := v - q[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// probes returns a copy of the counts so far.
func (s *stateServer) probes() probeCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.served)
}

// lockTraffic returns a copy of the counts so far of the paths named; a
// path without requests is left out.
func (s *stateServer) lockTraffic(paths []string) map[string]lockTraffic {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]lockTraffic, len(paths))
	for _, p := range paths {
		if t, ok := s.traffic[p]; ok {
			out[p] = t
		}
	}
	return out
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
	s := &stateServer{process: p, served: probeCounts{}, traffic: map[string]lockTraffic{}}
	found := make(chan string, 1)
	go func() {
		defer func() { _ = logFile.Close() }()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if method, path, status, ok := parseRequestLine(line); ok {
				s.mu.Lock()
				s.served[batchOfStatePath(path)]++
				s.traffic[path] = s.traffic[path].add(method, status)
				s.mu.Unlock()
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

// parseRequestLine reads the method, path and status of a state server
// request line (`level=INFO msg=request method=GET path=/state/x
// status=404 ...`); ok is false for other lines. A missing field reads as
// empty or 0.
func parseRequestLine(line string) (method, path string, status int, ok bool) {
	if !strings.Contains(line, " msg=request ") {
		return "", "", 0, false
	}
	field := func(name string) string {
		_, rest, found := strings.Cut(line, " "+name+"=")
		if !found {
			return ""
		}
		v, _, _ := strings.Cut(rest, " ")
		return v
	}
	status, _ = strconv.Atoi(field("status"))
	return field("method"), field("path"), status, true
}

// batchOfStatePath returns the batch prefix of the backend a state path
// belongs to: "/state/<prefix>-NNNN-hb-NNNNN" (see newBackend and
// planBatch) gives prefix, any other path "".
func batchOfStatePath(path string) string {
	state, ok := strings.CutPrefix(path, "/state/")
	if !ok {
		return ""
	}
	i := strings.LastIndex(state, "-hb-")
	if i < 0 {
		return ""
	}
	j := strings.LastIndexByte(state[:i], '-')
	if j < 0 {
		return ""
	}
	return state[:j]
}

// stateDataDir is the state server's data directory under dir.
func stateDataDir(dir string) string { return filepath.Join(dir, "states") }
