package main

import (
	"net"
	"sync"
)

// limitListener accepts at most a fixed number of connections at once: once
// they are open, Accept waits until one of them closes. The connections
// that wait stay in the kernel's accept queue and hold no descriptor of the
// process.
type limitListener struct {
	net.Listener
	slots     chan struct{}
	closeOnce sync.Once
	done      chan struct{}
}

// newLimitListener returns ln accepting at most n connections at once.
func newLimitListener(ln net.Listener, n int) net.Listener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection, which gives the slot
// back when it is closed.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	conn, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err // unwrapped: net/http inspects the errors of its listener
	}
	return &limitedConn{Conn: conn, release: func() { <-l.slots }}, nil
}

// Close closes the listener, and ends an Accept waiting for a slot.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn gives its slot back when it is first closed.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and frees its slot.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
