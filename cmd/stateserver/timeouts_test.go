package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// closeWait bounds how long a test waits for the server to close a
// connection it should give up on after a one-second timeout.
const closeWait = 20 * time.Second

// timeoutArgs run the server with short timeouts, so that the tests see them
// expire.
var timeoutArgs = []string{"--listen", "127.0.0.1:0", "--body-timeout", "1s", "--idle-timeout", "1s"}

func TestStalledConnectionsAreClosed(t *testing.T) {
	base, _, _ := runInProcess(t, timeoutArgs, nil)
	addr := strings.TrimPrefix(base, "http://")

	cases := map[string]struct {
		// send is written on a new connection; when response is set, its
		// answer is read and must have that status before waiting.
		send     string
		response int
	}{
		"headers, then nothing": {
			send: "POST /state/x HTTP/1.1\r\nHost: stateserver\r\nContent-Length: 100\r\n\r\n",
		},
		"part of the body, then nothing": {
			send: "POST /state/x HTTP/1.1\r\nHost: stateserver\r\nContent-Length: 100\r\n\r\n{\"version\":",
		},
		"a chunked body that stops": {
			send: "PUT /state/x HTTP/1.1\r\nHost: stateserver\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"ver\r\n",
		},
		"an idle keep-alive connection": {
			send:     "GET /state/x HTTP/1.1\r\nHost: stateserver\r\n\r\n",
			response: http.StatusNotFound,
		},
		"half a request line": {
			send: "GET /sta",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			conn := dial(t, addr)
			if _, err := io.WriteString(conn, tc.send); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(conn)
			if tc.response != 0 {
				resp, err := http.ReadResponse(r, nil)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.response {
					t.Fatalf("status %d, want %d", resp.StatusCode, tc.response)
				}
			}
			waitForClose(t, conn, r)
		})
	}
}

// TestSlowSteadyBodyIsServed sends a body one byte every 100ms, four times
// longer in all than --body-timeout: progress restarts the timeout, so a
// slow but steady upload succeeds.
func TestSlowSteadyBodyIsServed(t *testing.T) {
	base, _, _ := runInProcess(t, timeoutArgs, nil)
	conn := dial(t, strings.TrimPrefix(base, "http://"))
	body := `{"version":4,"serial":1,"lineage":"slow"}`
	if _, err := io.WriteString(conn, "POST /state/slow HTTP/1.1\r\nHost: stateserver\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range len(body) {
		time.Sleep(100 * time.Millisecond)
		if _, err := conn.Write([]byte{body[i]}); err != nil {
			t.Fatalf("writing byte %d after %v: %v", i, time.Since(start), err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	status, got := newDirectClient(t, base, nil).do(http.MethodGet, "/state/slow", nil)
	if status != http.StatusOK || got != body {
		t.Errorf("GET: %d %q, want 200 %q", status, got, body)
	}
}

// TestStalledReaderIsDropped stops reading a large state after its first
// bytes: the server gives up writing after --body-timeout and closes the
// connection, so the client never gets the rest.
func TestStalledReaderIsDropped(t *testing.T) {
	base, _, _ := runInProcess(t, timeoutArgs, nil)
	const size = 32 << 20
	state := bytes.Repeat([]byte(" "), size)
	if status, body := newDirectClient(t, base, nil).do(http.MethodPost, "/state/large", state); status != http.StatusOK {
		t.Fatalf("POST: %d %s", status, body)
	}

	conn := dial(t, strings.TrimPrefix(base, "http://"))
	if _, err := io.WriteString(conn, "GET /state/large HTTP/1.1\r\nHost: stateserver\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	// Stop reading well past the timeout, then read what is left.
	time.Sleep(5 * time.Second)
	if err := conn.SetReadDeadline(time.Now().Add(closeWait)); err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection is still open %v after the client stopped reading", closeWait)
	}
	if n >= size {
		t.Errorf("the client got all %d bytes after stalling, want the server to drop it", n)
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 10 * time.Second}
	conn, err := d.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// waitForClose reads until the server closes conn (anything it still sends
// is ignored) and fails the test when that takes longer than closeWait.
func waitForClose(t *testing.T, conn net.Conn, r io.Reader) {
	t.Helper()
	start := time.Now()
	if err := conn.SetReadDeadline(start.Add(closeWait)); err != nil {
		t.Fatal(err)
	}
	_, err := io.Copy(io.Discard, r)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the server kept the connection open for %v", closeWait)
	}
	t.Logf("closed by the server after %v (%v)", time.Since(start).Round(time.Millisecond), err)
}

// TestStalledHTTP2BodyIsReset stalls a request body on an HTTP/2 connection,
// as Terraform speaks over TLS: the server gives up on the stream after
// --body-timeout, and the connection keeps serving.
func TestStalledHTTP2BodyIsReset(t *testing.T) {
	pki := newTestPKI(t)
	base, _, _ := runInProcess(t, append(slices.Clone(timeoutArgs), "--tls-cert", pki.serverCertFile, "--tls-key", pki.serverKeyFile), nil)
	transport := &http.Transport{TLSClientConfig: pki.clientTLS(nil), ForceAttemptHTTP2: true}
	t.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{Transport: transport}

	body, stall := io.Pipe()
	t.Cleanup(func() { _ = stall.Close() })
	go func() { _, _ = io.WriteString(stall, `{"version":`) }()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/state/x", body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 100
	answered := make(chan string, 1)
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			answered <- "error: " + err.Error()
			return
		}
		resp.Body.Close()
		answered <- resp.Proto + " " + resp.Status
	}()
	select {
	case got := <-answered:
		t.Logf("the stalled upload ended with %s", got)
		if strings.HasPrefix(got, "HTTP/") && !strings.HasPrefix(got, "HTTP/2.0 400") {
			t.Errorf("the stalled upload got %s, want an HTTP/2 400 or a reset stream", got)
		}
	case <-time.After(closeWait):
		t.Fatalf("the stalled HTTP/2 upload is still open after %v", closeWait)
	}

	req, err = http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/state/x", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET after the stall: %s %s, want HTTP/2 404", resp.Proto, resp.Status)
	}
}
