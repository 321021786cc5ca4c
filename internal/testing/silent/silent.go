// Package silent is a loopback TCP server that accepts connections and
// never answers them: the hung state server of the tests of timeouts and
// circuits.
package silent

import (
	"net"
	"sync"
	"testing"
)

// Server accepts loopback connections, never answers, and counts them.
type Server struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

// Listen starts a Server on 127.0.0.1, closed with its connections when
// the test ends.
func Listen(t *testing.T) *Server {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.conns {
			_ = c.Close()
		}
	})
	return s
}

// URL is the server's http:// URL.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Accepted is how many connections the server accepted.
func (s *Server) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
