package controllers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// loopbackOnly is the resolver and the final dial of the managers the
// suite runs, around the address policy: it resolves localhost only and
// connects to loopback addresses only, and refuses and records any other
// name or address, so that the suite fails when the manager tried to leave
// the machine (see startManagerLogging). A test may only send traffic to
// loopback addresses, and a DNS query is traffic.
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

// LookupNetIP implements netguard.Resolver: localhost as the system
// resolves it (from the hosts file), any other name refused.
func (g *loopbackOnly) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return net.DefaultResolver.LookupNetIP(ctx, network, "localhost")
	}
	g.mu.Lock()
	g.refused = append(g.refused, "lookup "+host)
	g.mu.Unlock()
	return nil, fmt.Errorf("lookup %s: %w", host, errNotLoopback)
}

// attempts returns the refused lookups and dials, as "lookup host" and
// "network address".
func (g *loopbackOnly) attempts() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.refused...)
}

func TestLoopbackOnly(t *testing.T) {
	var lc net.ListenConfig
	l, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
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
	if addrs, err := g.LookupNetIP(context.Background(), "ip", "localhost"); err != nil || len(addrs) == 0 || !addrs[0].IsLoopback() {
		t.Errorf("lookup localhost = %v, %v; want loopback", addrs, err)
	}
	if addrs, err := g.LookupNetIP(context.Background(), "ip", "state.example.com"); !errors.Is(err, errNotLoopback) {
		t.Errorf("lookup state.example.com = %v, %v; want errNotLoopback", addrs, err)
	}
	want := []string{"tcp 192.0.2.1:443", "tcp [2001:db8::1]:443", "tcp [::ffff:192.0.2.1]:80", "tcp cos.example:443", "lookup state.example.com"}
	if got := g.attempts(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("attempts = %q, want %q", got, want)
	}
}
