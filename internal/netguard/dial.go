package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// ErrAddressDenied matches every *DeniedError.
var ErrAddressDenied = errors.New("address denied by the address policy")

// DeniedError reports a connection refused because the policy denies
// every address the host resolved to. Its text names the host, the port,
// each refused address and the flag that would allow it; it never holds
// a quote character or anything but those.
type DeniedError struct {
	// Host is the host as asked for: a name or an IP literal.
	Host string
	// Port is the port as asked for.
	Port string
	// Refusals says, per address, why it was refused.
	Refusals []Refusal
}

// maxListedRefusals bounds the addresses an error lists.
const maxListedRefusals = 4

// Error implements error.
func (e *DeniedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "connection to host %s port %s refused by the address policy: ", e.Host, e.Port)
	for i, r := range e.Refusals {
		if i == maxListedRefusals {
			fmt.Fprintf(&b, "; and %d more", len(e.Refusals)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r.String())
	}
	return b.String()
}

// Is reports whether target is ErrAddressDenied.
func (e *DeniedError) Is(target error) bool { return target == ErrAddressDenied }

// Resolver looks up the IP addresses of a host; *net.Resolver is one.
// network is "ip", "ip4" or "ip6".
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc has the signature of net.Dialer.DialContext and of
// http.Transport.DialContext.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Dialer connects only to addresses its Policy allows. Use its DialContext
// as an http.Transport's DialContext. The zero Dialer allows everything
// and uses the system resolver.
type Dialer struct {
	// Policy decides which addresses may be reached.
	Policy Policy
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
	// Dial connects to one IP literal and port; nil means a net.Dialer
	// with http.DefaultTransport's settings (30 s connect timeout and
	// keep-alive).
	Dial DialFunc
}

// DialContext connects to address ("host:port") over network ("tcp",
// "tcp4" or "tcp6"). It resolves host itself (an IP literal is taken as
// is), drops the addresses the Policy refuses and dials the others, in
// the resolver's order, by IP literal, until one connects: what was
// checked is what is connected to. When the Policy refuses every address
// it fails with a *DeniedError matching ErrAddressDenied, without
// dialling anything. Other failures are the resolver's error or the
// first dial error.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	lookupNetwork, ok := map[string]string{"tcp": "ip", "tcp4": "ip4", "tcp6": "ip6"}[network]
	if !ok {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("netguard: network %s is not supported", network)}
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	if host == "" {
		return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("netguard: no host to dial")}
	}
	addrs, err := d.resolve(ctx, lookupNetwork, host)
	if err != nil {
		return nil, err
	}
	allowed, refusals := d.sort(addrs, lookupNetwork)
	if len(allowed) == 0 {
		if len(refusals) == 0 {
			return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no addresses of the wanted family", Name: host, IsNotFound: true}}
		}
		return nil, &DeniedError{Host: host, Port: port, Refusals: refusals}
	}
	return d.dialFirst(ctx, network, port, allowed)
}

// resolve returns host's addresses: an IP literal itself, else the
// resolver's answer, which must not be empty.
func (d *Dialer) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, network, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	return addrs, nil
}

// sort splits addrs into those to dial (unmapped, zone kept, of the
// wanted family, without duplicates) and the refused ones.
func (d *Dialer) sort(addrs []netip.Addr, network string) ([]netip.Addr, []Refusal) {
	var (
		allowed  []netip.Addr
		refusals []Refusal
		seen     = map[netip.Addr]bool{}
	)
	for _, a := range addrs {
		a = a.Unmap()
		if seen[a] || network == "ip4" && !a.Is4() || network == "ip6" && !a.Is6() {
			continue
		}
		seen[a] = true
		if r := d.Policy.Check(a); r != nil {
			refusals = append(refusals, *r)
			continue
		}
		allowed = append(allowed, a)
	}
	return allowed, refusals
}

// dialFirst dials the addresses in turn and returns the first connection,
// or the first error when none connects.
func (d *Dialer) dialFirst(ctx context.Context, network, port string, addrs []netip.Addr) (net.Conn, error) {
	dial := d.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	var first error
	for _, a := range addrs {
		if err := ctx.Err(); err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		conn, err := dial(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}
