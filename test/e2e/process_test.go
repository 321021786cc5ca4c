package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// process is a binary of the suite running in the background. Its output is
// kept, and copied to GinkgoWriter with a prefix so that a failing spec
// shows it.
type process struct {
	name   string
	cmd    *exec.Cmd
	mu     sync.Mutex
	output bytes.Buffer
	exited chan struct{}
	err    error // set when exited is closed
}

// startProcess starts path with args and exactly env (plus PATH).
func startProcess(name, path string, args, env []string) *process {
	cmd := exec.Command(path, args...) //nolint:noctx // stop() ends it with SIGTERM and checks the exit; a context would kill it first
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	setParentDeathSignal(cmd)
	return startCommand(name, cmd)
}

// startCommand starts cmd, prepared by the caller (its environment, its
// directory, its process attributes), keeping its output as startProcess
// does.
func startCommand(name string, cmd *exec.Cmd) *process {
	p := &process{name: name, cmd: cmd, exited: make(chan struct{})}
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	Expect(p.cmd.Start()).To(Succeed(), "starting %s", name)

	copied := make(chan struct{})
	go func() {
		defer close(copied)
		s := bufio.NewScanner(pr)
		s.Buffer(make([]byte, 64<<10), 1<<20)
		for s.Scan() {
			p.mu.Lock()
			p.output.Write(s.Bytes())
			p.output.WriteByte('\n')
			p.mu.Unlock()
			_, _ = fmt.Fprintf(GinkgoWriter, "[%s] %s\n", name, s.Bytes())
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		err := p.cmd.Wait()
		_ = pw.Close()
		<-copied
		p.err = err
		close(p.exited)
	}()
	return p
}

// logs returns everything the process wrote so far.
func (p *process) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

// logLinesWith returns the lines of the output holding s.
func (p *process) logLinesWith(s string) []string {
	var lines []string
	for line := range strings.SplitSeq(p.logs(), "\n") {
		if strings.Contains(line, s) {
			lines = append(lines, line)
		}
	}
	return lines
}

// logWait bounds how long waitForLog waits for a line.
const logWait = 30 * time.Second

// waitForLog waits up to logWait until the output matches re and returns
// the first submatch (or the whole match). It fails when the process exits
// first.
func (p *process) waitForLog(re *regexp.Regexp) string {
	var found string
	Eventually(func(g Gomega) {
		select {
		case <-p.exited:
			g.Expect(p.err).NotTo(HaveOccurred())
			StopTrying(fmt.Sprintf("%s exited before logging %q:\n%s", p.name, re, p.logs())).Now()
		default:
		}
		m := re.FindStringSubmatch(p.logs())
		g.Expect(m).NotTo(BeNil(), "%s has not logged %q yet", p.name, re)
		found = m[len(m)-1]
	}).WithTimeout(logWait).Should(Succeed())
	return found
}

// stop sends SIGTERM and expects a clean exit within 30 seconds.
func (p *process) stop() {
	select {
	case <-p.exited:
		Expect(p.err).NotTo(HaveOccurred(), "%s exited on its own:\n%s", p.name, p.logs())
		return
	default:
	}
	Expect(p.cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
	select {
	case <-p.exited:
		Expect(p.err).NotTo(HaveOccurred(), "%s exited badly after SIGTERM", p.name)
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		Fail(p.name + " still running 30s after SIGTERM")
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
	var exitErr *exec.ExitError
	Expect(errors.As(p.err, &exitErr)).To(BeTrue(), "%s: %v", p.name, p.err)
}

// stateServerOptions configure a state server process.
type stateServerOptions struct {
	// listen is host:port; empty picks a free port on 127.0.0.1.
	listen             string
	dataDir            string
	username, password string
	// tls serves HTTPS with the suite's server certificate; clientCA
	// also requires client certificates signed by the suite's CA.
	tls, clientCA bool
	// mode are flags that make it behave as another kind of state
	// server (docs/servers.md): --conflict, --unlock, --gitlab, ...
	mode []string
}

// stateServerProcess is a running cmd/stateserver.
type stateServerProcess struct {
	*process
	opts stateServerOptions
	// url is scheme://127.0.0.1:port, from its "listening on" line.
	url string
}

var listeningOn = regexp.MustCompile(`listening on (https?://[^\s"]+)`)

// startStateServer runs cmd/stateserver until stop is called.
func startStateServer(opts stateServerOptions) *stateServerProcess {
	listen := opts.listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	args := []string{"--listen", listen, "--data-dir", opts.dataDir}
	var env []string
	if opts.username != "" {
		args = append(args, "--username", opts.username)
		env = append(env, "STATESERVER_PASSWORD="+opts.password)
	}
	if opts.tls {
		args = append(args, "--tls-cert", pkiFiles.ServerCert, "--tls-key", pkiFiles.ServerKey)
	}
	if opts.clientCA {
		args = append(args, "--client-ca", pkiFiles.CACert)
	}
	args = append(args, opts.mode...)
	p := startProcess("stateserver", bin.stateserver, args, env)
	s := &stateServerProcess{process: p, opts: opts}
	s.url = p.waitForLog(listeningOn)
	return s
}

// restart stops the server and starts it again on the same address and
// data directory with another password.
func (s *stateServerProcess) restart(password string) *stateServerProcess {
	s.stop()
	opts := s.opts
	opts.listen = strings.TrimPrefix(strings.TrimPrefix(s.url, "https://"), "http://")
	opts.password = password
	return startStateServer(opts)
}

// stateURL is the address of the state called name.
func (s *stateServerProcess) stateURL(name string) string { return s.url + "/state/" + name }

// managerProcess is a running cmd/manager.
type managerProcess struct {
	*process
	// identity is the ServiceAccount it runs as.
	identity managerIdentity
}

// loopbackOnly are the manager flags that let its probes and reads connect
// to loopback addresses only.
var loopbackOnly = []string{"--allowed-address-cidrs=127.0.0.0/8,::1/128"}

// startManager runs cmd/manager against the suite's API server, watching
// only namespace, as the suite's manager ServiceAccount with exactly the
// RBAC the chart ships (managerID). Nothing it sends may leave the
// machine: its address policy allows loopback only, and its proxy is the
// suite's egress recorder. When the spec (or ordered container) that
// started it ends, after it stopped, the spec fails if the recorder got a
// request, the manager logged a refused address (expectLoopbackOnly) or
// the API server denied it a request (expectNeverForbidden). A CosBackend
// needs a COS double: pass --cos-service-url.
func startManager(namespace string, extraArgs ...string) *managerProcess {
	return startManagerWithEnv(namespace, nil, extraArgs...)
}

// startManagerWithEnv is startManager with extra environment variables.
func startManagerWithEnv(namespace string, extraEnv []string, extraArgs ...string) *managerProcess {
	return startManagerAs(managerID, namespace, extraEnv, extraArgs...)
}

// startManagerAs is startManagerWithEnv running as id, watching the
// comma-separated namespaces.
func startManagerAs(id managerIdentity, namespaces string, extraEnv []string, extraArgs ...string) *managerProcess {
	m := launchManagerAs(id, namespaces, extraEnv, extraArgs...)
	m.waitForLog(workersStarted)
	return m
}

// workersStarted is the log line of a manager whose controllers reconcile.
var workersStarted = regexp.MustCompile(`Starting workers`)

// launchManagerAs is startManagerAs returning at once, before the manager
// reconciles (a manager that waits to be elected leader never does).
func launchManagerAs(id managerIdentity, namespaces string, extraEnv []string, extraArgs ...string) *managerProcess {
	args := append([]string{
		"--kubeconfig", id.kubeconfig,
		"--watch-namespaces", namespaces,
		"--health-probe-bind-address", "127.0.0.1:0",
		"--metrics-bind-address", "0",
	}, loopbackOnly...)
	args = append(args, extraArgs...)
	env := append(egress.env(), extraEnv...)
	p := startProcess("manager", bin.manager, args, env)
	m := &managerProcess{process: p, identity: id}
	// Registered before the caller's DeferCleanup(m.stop): runs after it.
	DeferCleanup(func() {
		expectLoopbackOnly(m)
		expectNeverForbidden(m)
		expectStructuredLogs(m)
		expectNoEgress()
	})
	return m
}

// expectStructuredLogs fails when a line the manager wrote is not a JSON
// object: client-go's own messages (leader election, watches) included,
// every line is structured, for log pipelines to parse.
func expectStructuredLogs(m *managerProcess) {
	var unstructured []string
	for line := range strings.Lines(m.logs()) {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) != nil {
			unstructured = append(unstructured, line)
		}
	}
	Expect(unstructured).To(BeEmpty(), "the manager wrote lines that are not JSON objects")
}

// cosDoubleProcess is a running hack/cosdouble.
type cosDoubleProcess struct {
	*process
	// url is its address, for the manager's --cos-service-url.
	url string
}

// startCosDouble runs hack/cosdouble, a local COS that accepts requests
// signed with secretID and secretKey and holds the empty buckets, until
// stop is called.
func startCosDouble(secretID, secretKey string, buckets ...string) *cosDoubleProcess {
	p := startProcess("cosdouble", bin.cosdouble,
		[]string{"--secret-id", secretID, "--bucket", strings.Join(buckets, ",")},
		[]string{"COSDOUBLE_SECRET_KEY=" + secretKey})
	return &cosDoubleProcess{process: p, url: p.waitForLog(listeningOn)}
}
