package netguard

import "net/netip"

// The forms an IPv6 address can embed an IPv4 address in, as Embedding.Form
// names them. Each delivers traffic to the embedded IPv4 address through a
// translator, a relay or a tunnel that the operator's network may have.
const (
	// FormIPv4Compatible is ::a.b.c.d (::/96 but :: and ::1), the
	// deprecated IPv4-compatible IPv6 address of RFC 4291, which automatic
	// tunnels (Linux sit) still send to a.b.c.d.
	FormIPv4Compatible = "IPv4-compatible, ::/96"
	// FormNAT64 is the well-known NAT64 prefix of RFC 6052, 64:ff9b::/96,
	// the IPv4 address in the last 32 bits.
	FormNAT64 = "NAT64, 64:ff9b::/96"
	// FormNAT64Local48 is the local-use NAT64 prefix of RFC 8215,
	// 64:ff9b:1::/48, used as a /48 prefix: RFC 6052 puts the IPv4
	// address in bits 48-63 and 72-87.
	FormNAT64Local48 = "local-use NAT64, 64:ff9b:1::/48 with a /48 prefix"
	// FormNAT64Local56 is a /56 prefix inside 64:ff9b:1::/48: the IPv4
	// address is in bits 56-63 and 72-95.
	FormNAT64Local56 = "local-use NAT64, 64:ff9b:1::/48 with a /56 prefix"
	// FormNAT64Local64 is a /64 prefix inside 64:ff9b:1::/48: the IPv4
	// address is in bits 72-103.
	FormNAT64Local64 = "local-use NAT64, 64:ff9b:1::/48 with a /64 prefix"
	// FormNAT64Local96 is a /96 prefix inside 64:ff9b:1::/48: the IPv4
	// address is in the last 32 bits.
	FormNAT64Local96 = "local-use NAT64, 64:ff9b:1::/48 with a /96 prefix"
	// Form6to4 is 2002::/16 (RFC 3056): the IPv4 address of the 6to4 site
	// in bits 16-47, which a 6to4 relay sends to.
	Form6to4 = "6to4, 2002::/16"
	// FormSIIT is ::ffff:0:a.b.c.d (::ffff:0:0:0/96), the IPv4-translated
	// address of SIIT (RFC 2765, RFC 6145), which a stateless translator
	// sends to a.b.c.d.
	FormSIIT = "IPv4-translated (SIIT), ::ffff:0:0:0/96"
	// FormTeredo is 2001::/32 (RFC 4380): the Teredo client's IPv4
	// address, which a Teredo relay sends to, is the last 32 bits
	// inverted (XOR 0xffffffff).
	FormTeredo = "Teredo, 2001::/32"
)

// Embedding is an IPv4 address that an IPv6 address embeds.
type Embedding struct {
	// Form names how the IPv6 address embeds IPv4: one of the Form
	// constants.
	Form string
	// IPv4 is the embedded address: where the traffic ends up.
	IPv4 netip.Addr
}

// The prefixes of the embedding forms.
var (
	compatiblePrefix = netip.MustParsePrefix("::/96")
	nat64LocalPrefix = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFourPrefix  = netip.MustParsePrefix("2002::/16")
	teredoPrefix     = netip.MustParsePrefix("2001::/32")
	siitPrefix       = netip.MustParsePrefix("::ffff:0:0:0/96")
)

// embeddedIPv4 returns the IPv4 addresses that the IPv6 address a embeds,
// in the forms the Form constants name, and nil for an IPv4 address, an
// IPv4-mapped one (check the address it maps instead), :: and ::1, and
// any other IPv6 address. a's zone is ignored.
//
// A local-use NAT64 address (64:ff9b:1::/48) gives four candidates, one per
// prefix length RFC 6052 allows inside the /48: which one a translator
// uses is its configuration, unknown here. Bits 64-71, which RFC 6052
// wants zero, are not checked: a translator may ignore them.
func embeddedIPv4(a netip.Addr) []Embedding {
	if !a.Is6() || a.Is4In6() {
		return nil
	}
	a = a.WithZone("")
	b := a.As16()
	at := func(i, j, k, l int) netip.Addr {
		return netip.AddrFrom4([4]byte{b[i], b[j], b[k], b[l]})
	}
	switch {
	case compatiblePrefix.Contains(a):
		if a.IsUnspecified() || a.IsLoopback() {
			return nil
		}
		return []Embedding{{Form: FormIPv4Compatible, IPv4: at(12, 13, 14, 15)}}
	case nat64Prefix.Contains(a):
		return []Embedding{{Form: FormNAT64, IPv4: at(12, 13, 14, 15)}}
	case nat64LocalPrefix.Contains(a):
		return []Embedding{
			{Form: FormNAT64Local48, IPv4: at(6, 7, 9, 10)},
			{Form: FormNAT64Local56, IPv4: at(7, 9, 10, 11)},
			{Form: FormNAT64Local64, IPv4: at(9, 10, 11, 12)},
			{Form: FormNAT64Local96, IPv4: at(12, 13, 14, 15)},
		}
	case siitPrefix.Contains(a):
		return []Embedding{{Form: FormSIIT, IPv4: at(12, 13, 14, 15)}}
	case sixToFourPrefix.Contains(a):
		return []Embedding{{Form: Form6to4, IPv4: at(2, 3, 4, 5)}}
	case teredoPrefix.Contains(a):
		return []Embedding{{Form: FormTeredo, IPv4: netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})}}
	}
	return nil
}
