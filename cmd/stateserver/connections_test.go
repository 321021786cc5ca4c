package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestConnectionLimit holds --max-connections connections open, each known
// to be served, and checks that one more gets no answer until one of them
// closes, then is served.
func TestConnectionLimit(t *testing.T) {
	const limit = 2
	cases := map[string]struct {
		// hold starts a request on conn and returns once the server is
		// known to serve the connection.
		hold func(t *testing.T, conn net.Conn, r *bufio.Reader)
	}{
		"idle keep-alive connections": {
			hold: func(t *testing.T, conn net.Conn, r *bufio.Reader) {
				t.Helper()
				writeString(t, conn, "GET /state/x HTTP/1.1\r\nHost: stateserver\r\n\r\n")
				readStatus(t, r, http.StatusNotFound)
			},
		},
		"uploads stalled in their body": {
			hold: func(t *testing.T, conn net.Conn, r *bufio.Reader) {
				t.Helper()
				writeString(t, conn, "POST /state/x HTTP/1.1\r\nHost: stateserver\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n")
				readStatus(t, r, http.StatusContinue)
				writeString(t, conn, `{"version":`)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base, _, _ := runInProcess(t, []string{"--listen", "127.0.0.1:0", "--max-connections", "2"}, nil)
			addr := strings.TrimPrefix(base, "http://")
			held := make([]net.Conn, limit)
			for i := range held {
				held[i] = dial(t, addr)
				tc.hold(t, held[i], bufio.NewReader(held[i]))
			}

			waiting := dial(t, addr)
			writeString(t, waiting, "GET /state/x HTTP/1.1\r\nHost: stateserver\r\n\r\n")
			r := bufio.NewReader(waiting)
			// Not served while the others are open: nothing comes back,
			// however long the wait (a short one keeps the test fast).
			if err := waiting.SetReadDeadline(time.Now().Add(300 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			if b, err := r.Peek(1); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("connection %d got %q, %v while %d were open, want no answer", limit+1, b, err, limit)
			}

			if err := held[0].Close(); err != nil {
				t.Fatal(err)
			}
			if err := waiting.SetReadDeadline(time.Now().Add(closeWait)); err != nil {
				t.Fatal(err)
			}
			readStatus(t, r, http.StatusNotFound)
		})
	}
}

// TestTricklingHeadersAreCut sends a request's headers one byte at a time,
// each byte well within --idle-timeout and --body-timeout: the server
// closes the connection once --header-timeout has passed since the request
// started, however steady the trickle.
func TestTricklingHeadersAreCut(t *testing.T) {
	base, _, _ := runInProcess(t, []string{
		"--listen", "127.0.0.1:0", "--header-timeout", "1s", "--idle-timeout", "1m", "--body-timeout", "1m",
	}, nil)
	addr := strings.TrimPrefix(base, "http://")
	cases := map[string]struct {
		// first, when set, is a request answered before the trickle.
		first string
	}{
		"a new connection":                {},
		"a keep-alive connection, reused": {first: "GET /state/x HTTP/1.1\r\nHost: stateserver\r\n\r\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			conn := dial(t, addr)
			r := bufio.NewReader(conn)
			if tc.first != "" {
				writeString(t, conn, tc.first)
				readStatus(t, r, http.StatusNotFound)
			}
			go trickle(conn, "GET /state/x HTTP/1.1\r\nHost: stateserver\r\nX-Trickle: "+strings.Repeat("a", 1000)+"\r\n\r\n")
			waitForClose(t, conn, r)
		})
	}
}

// trickle writes s to conn one byte every 100ms, until it is written or
// writing fails (the connection closed).
func trickle(conn net.Conn, s string) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := range len(s) {
		<-tick.C
		if _, err := conn.Write([]byte{s[i]}); err != nil {
			return
		}
	}
}

func writeString(t *testing.T, conn net.Conn, s string) {
	t.Helper()
	if _, err := io.WriteString(conn, s); err != nil {
		t.Fatal(err)
	}
}

// readStatus reads an answer (or an interim 100 Continue) from r and fails
// the test unless it has status want.
func readStatus(t *testing.T, r *bufio.Reader, want int) {
	t.Helper()
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if want != http.StatusContinue {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if resp.StatusCode != want {
		t.Fatalf("status %d, want %d", resp.StatusCode, want)
	}
}
