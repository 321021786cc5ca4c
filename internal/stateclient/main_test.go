package stateclient

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"

	"github.com/infrastate/backend-operator/internal/stateserver"
)

// serverModeEnv makes the test binary serve the reference state server
// instead of running tests: benchmarks start it as a child process so that
// the server's allocations and CPU time are not counted as the client's.
const serverModeEnv = "STATECLIENT_TEST_SERVE_REFERENCE"

func TestMain(m *testing.M) {
	if os.Getenv(serverModeEnv) == "1" {
		serveReference()
		return
	}
	code := m.Run()
	stopReference()
	os.Exit(code)
}

// serveReference serves a memory-backed reference server on a loopback
// port, prints its URL on stdout and exits when stdin is closed.
func serveReference() {
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // the parent closes stdin to stop us
		os.Exit(0)
	}()
	fmt.Printf("http://%s\n", ln.Addr())
	err = http.Serve(ln, stateserver.New(stateserver.NewMemoryStore()))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
