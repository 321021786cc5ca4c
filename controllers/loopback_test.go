package controllers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
)

// loopbackOnly is the final dial of the managers the suite runs, beneath
// the address policy: it connects to loopback addresses only, and refuses
// and records any other, so that the suite fails when the manager tried
// to leave the machine (see startManagerLogging). A test may only send
// traffic to loopback addresses.
type loopbackOnly struct {
	mu      sync.Mutex
	refused []string
}

// errNotLoopback is loopbackOnly's refusal.
var errNotLoopback = errors.New("the test suite refuses connections to anything but loopback")

// DialContext has the signature of net.Dialer.DialContext.
func (g *loopbackOnly) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if a, err := netip.ParseAddr(host); err != nil || !a.Unmap().IsLoopback() {
		g.mu.Lock()
		g.refused = append(g.refused, network+" "+address)
		g.mu.Unlock()
		return nil, fmt.Errorf("dial %s %s: %w", network, address, errNotLoopback)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

// attempts returns the refused dials, as "network address".
func (g *loopbackOnly) attempts() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.refused...)
}

func TestLoopbackOnly(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var g loopbackOnly
	conn, err := g.DialContext(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatalf("dialing loopback: %v", err)
	}
	conn.Close()
	for _, address := range []string{"192.0.2.1:443", "[2001:db8::1]:443", "[::ffff:192.0.2.1]:80", "cos.example:443"} {
		if conn, err := g.DialContext(context.Background(), "tcp", address); !errors.Is(err, errNotLoopback) {
			if conn != nil {
				conn.Close()
			}
			t.Errorf("dial %s = %v, want errNotLoopback", address, err)
		}
	}
	want := []string{"tcp 192.0.2.1:443", "tcp [2001:db8::1]:443", "tcp [::ffff:192.0.2.1]:80", "tcp cos.example:443"}
	if got := g.attempts(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("attempts = %q, want %q", got, want)
	}
}
