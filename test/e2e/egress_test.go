package e2e

import (
	"net/http"
	"net/http/httptest"
	"sync"

	. "github.com/onsi/gomega"
)

// egressRecorder stands in for everything outside the machine: the
// processes the suite starts that speak HTTP (the manager, terraform) get
// it as their HTTP and HTTPS proxy, so that a request they make to
// anything but loopback (Go never proxies loopback addresses) comes here
// instead, without a DNS lookup. It answers 403 and records the request;
// the suite fails when any came (expectNoEgress). A test may only send
// traffic to loopback addresses.
type egressRecorder struct {
	srv *httptest.Server

	mu   sync.Mutex
	seen []string
}

// egress is the suite's recorder, started in BeforeSuite.
var egress *egressRecorder

// startEgressRecorder starts the recorder on a loopback port.
func startEgressRecorder() *egressRecorder {
	e := &egressRecorder{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// CONNECT names host:port in Host; a proxied plain request has an
		// absolute URL, whose host Host also holds.
		e.mu.Lock()
		e.seen = append(e.seen, r.Method+" "+r.Host)
		e.mu.Unlock()
		http.Error(w, "the end-to-end tests send nothing beyond loopback", http.StatusForbidden)
	}))
	return e
}

// env is the proxy environment of a process the suite starts.
func (e *egressRecorder) env() []string {
	return []string{"HTTPS_PROXY=" + e.srv.URL, "HTTP_PROXY=" + e.srv.URL, "NO_PROXY=127.0.0.1,localhost,::1"}
}

// requests returns what reached the recorder so far, as "METHOD host".
func (e *egressRecorder) requests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.seen...)
}

func (e *egressRecorder) close() { e.srv.Close() }

// expectNoEgress fails when a process of the suite sent a request beyond
// loopback.
func expectNoEgress() {
	Expect(egress.requests()).To(BeEmpty(), "a process of the suite sent requests to addresses other than loopback")
}

// addressRefusal is what the manager logs when its address policy refuses
// a connection.
const addressRefusal = "refused by the address policy"

// expectLoopbackOnly fails when the manager's log shows a connection its
// address policy refused: the suite runs it allowing loopback only
// (startManager), so any refusal is an attempt to leave the machine that
// did not go through the proxy.
func expectLoopbackOnly(m *managerProcess) {
	Expect(m.logLinesWith(addressRefusal)).To(BeEmpty(), "the manager tried to connect to addresses other than loopback")
}
