package netguard

import (
	"net/netip"
)

// The manager flags that set a Policy. Errors name them so that a refused
// user learns which setting would let the address through.
const (
	// AllowedFlag sets Policy.Allowed.
	AllowedFlag = "allowed-address-cidrs"
	// DeniedFlag sets Policy.Denied; its default is DefaultDenied.
	DeniedFlag = "denied-address-cidrs"
)

// defaultDenied lists the link-local ranges and the well-known cloud
// metadata and platform addresses outside them. Every entry reaches a
// service that answers the node (and so the operator) with cloud
// credentials or host configuration.
var defaultDenied = []netip.Prefix{
	// IPv4 link-local. Holds the instance metadata service of AWS (IMDS),
	// Google Cloud, Azure (IMDS), Oracle Cloud, OpenStack, DigitalOcean,
	// Hetzner and Huawei Cloud at 169.254.169.254; Tencent Cloud's at
	// 169.254.0.23; AWS's ECS task metadata and credentials at
	// 169.254.170.2 and EKS Pod Identity Agent at 169.254.170.23;
	// Scaleway's at 169.254.42.42.
	netip.MustParsePrefix("169.254.0.0/16"),
	// IPv6 link-local. Holds OpenStack's IPv6 metadata fe80::a9fe:a9fe.
	netip.MustParsePrefix("fe80::/10"),
	// Alibaba Cloud ECS instance metadata service.
	netip.MustParsePrefix("100.100.100.200/32"),
	// Azure WireServer (host agent, VM extensions configuration).
	netip.MustParsePrefix("168.63.129.16/32"),
	// Oracle Cloud Infrastructure Classic metadata service.
	netip.MustParsePrefix("192.0.0.192/32"),
	// AWS instance metadata service over IPv6 (Nitro instances).
	netip.MustParsePrefix("fd00:ec2::254/128"),
	// AWS EKS Pod Identity Agent over IPv6.
	netip.MustParsePrefix("fd00:ec2::23/128"),
	// Google Cloud metadata server for IPv6-only instances.
	netip.MustParsePrefix("fd20:ce::254/128"),
	// Oracle Cloud Infrastructure instance metadata service over IPv6.
	netip.MustParsePrefix("fd00:c1::a9fe:a9fe/128"),
	// Scaleway instance metadata service over IPv6.
	netip.MustParsePrefix("fd00:42::42/128"),
}

// nat64Prefix is the well-known NAT64 prefix (RFC 6052): on an IPv6-only
// network with NAT64, 64:ff9b::a9fe:a9fe reaches 169.254.169.254. Every
// Policy denies the NAT64 forms of its denied IPv4 ranges (embeddedIPv4);
// the default list spells them out too, as the shipped manifests do.
var nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")

// DefaultDenied returns a fresh copy of the default denied prefixes: the
// IPv4 and IPv6 link-local ranges, the well-known cloud metadata and
// platform addresses outside them, and the NAT64 forms (64:ff9b::/96) of
// the IPv4 ones.
func DefaultDenied() []netip.Prefix {
	out := append([]netip.Prefix(nil), defaultDenied...)
	for _, p := range defaultDenied {
		if p.Addr().Is4() {
			out = append(out, nat64(p))
		}
	}
	return out
}

// nat64 returns the IPv4 prefix p embedded in the well-known NAT64 prefix.
func nat64(p netip.Prefix) netip.Prefix {
	v6 := nat64Prefix.Addr().As16()
	v4 := p.Addr().As4()
	copy(v6[12:], v4[:])
	return netip.PrefixFrom(netip.AddrFrom16(v6), 96+p.Bits())
}

// Policy says which IP addresses may be connected to. The zero Policy
// allows every valid address except the unspecified ones, which no Policy
// allows.
type Policy struct {
	// Allowed, when not empty, lists the only prefixes that may be reached.
	Allowed []netip.Prefix
	// Denied lists prefixes that may never be reached, whatever Allowed
	// says.
	Denied []netip.Prefix
}

// DefaultPolicy denies DefaultDenied and allows everything else.
func DefaultPolicy() Policy {
	return Policy{Denied: DefaultDenied()}
}

// Allows reports whether p lets a be reached: no denied prefix contains
// it, nor the IPv4 address it embeds (IPv4-compatible, NAT64, 6to4 or
// Teredo: see the Form constants), and, when Allowed is not empty, an
// allowed prefix contains it. An IPv4-mapped IPv6 address is checked as
// the IPv4 address it maps and an IPv6 zone is ignored. The zero Addr and the unspecified addresses
// (0.0.0.0, :: and ::ffff:0.0.0.0) are never allowed, whatever the lists
// say: on Linux a connection to an unspecified address reaches the local
// host, as loopback would.
func (p Policy) Allows(a netip.Addr) bool {
	return p.Check(a) == nil
}

// Check returns nil when p allows a (see Allows), or the reason it does
// not.
func (p Policy) Check(a netip.Addr) *Refusal {
	a = normalizeAddr(a)
	if !a.IsValid() || a.IsUnspecified() {
		return &Refusal{Addr: a}
	}
	if d, ok := p.denied(a); ok {
		return &Refusal{Addr: a, DeniedBy: d}
	}
	for _, e := range embeddedIPv4(a) {
		if d, ok := p.denied(e.IPv4); ok {
			return &Refusal{Addr: a, DeniedBy: d, Via: e}
		}
	}
	if len(p.Allowed) == 0 {
		return nil
	}
	for _, al := range p.Allowed {
		if normalizePrefix(al).Contains(a) {
			return nil
		}
	}
	return &Refusal{Addr: a}
}

// denied returns the first denied prefix holding a, normalized.
func (p Policy) denied(a netip.Addr) (netip.Prefix, bool) {
	for _, d := range p.Denied {
		if d = normalizePrefix(d); d.Contains(a) {
			return d, true
		}
	}
	return netip.Prefix{}, false
}

// Refusal says why a Policy refuses an address.
type Refusal struct {
	// Addr is the refused address, unmapped and without zone.
	Addr netip.Addr
	// DeniedBy is the denied prefix holding Addr; the zero Prefix when
	// Addr is refused for lying outside every allowed prefix, or for being
	// invalid or unspecified.
	DeniedBy netip.Prefix
	// Via is the IPv4 address that Addr embeds and DeniedBy holds; the
	// zero Embedding when DeniedBy holds Addr itself.
	Via Embedding
}

// never reports whether no setting allows r.Addr: it is invalid or
// unspecified.
func (r Refusal) never() bool {
	return !r.Addr.IsValid() || r.Addr.IsUnspecified()
}

// Setting names the manager flag that would allow the address, or is
// empty when none would (an invalid or unspecified address).
func (r Refusal) Setting() string {
	switch {
	case r.never():
		return ""
	case r.DeniedBy.IsValid():
		return DeniedFlag
	}
	return AllowedFlag
}

// String says what was refused and why, with the flag to change.
func (r Refusal) String() string {
	switch {
	case !r.Addr.IsValid():
		return "an invalid address is never allowed"
	case r.Addr.IsUnspecified():
		return r.Addr.String() + " is an unspecified address, which is never allowed: a connection to it reaches the local host"
	case r.DeniedBy.IsValid() && r.Via.IPv4.IsValid():
		return r.Addr.String() + " embeds " + r.Via.IPv4.String() + " (" + r.Via.Form + "), which is in the denied range " + r.DeniedBy.String() + " (--" + r.Setting() + ")"
	case r.DeniedBy.IsValid():
		return r.Addr.String() + " is in the denied range " + r.DeniedBy.String() + " (--" + r.Setting() + ")"
	}
	return r.Addr.String() + " is outside the allowed ranges (--" + r.Setting() + ")"
}

// normalizeAddr unmaps an IPv4-mapped IPv6 address and drops a zone:
// netip.Prefix.Contains is false for a zoned address, which would let a
// zoned link-local address through a deny list.
func normalizeAddr(a netip.Addr) netip.Addr {
	return a.Unmap().WithZone("")
}

// normalizePrefix masks p and turns an IPv4-mapped prefix of at least 96
// bits into the IPv4 prefix it maps, so that it matches unmapped
// addresses.
func normalizePrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}
