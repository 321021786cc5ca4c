package netguard

import (
	"fmt"
	"net/netip"
	"strings"
)

// ParsePrefixes parses a comma-separated list of CIDR prefixes and bare IP
// addresses, as given in a flag. Spaces around entries and empty entries
// are ignored; a bare address is a single-address prefix; host bits are
// cleared; an IPv4-mapped IPv6 entry becomes the IPv4 prefix it maps. An
// empty string gives an empty list. Errors name the bad entry.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		p, err := parsePrefix(entry)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func parsePrefix(entry string) (netip.Prefix, error) {
	if strings.Contains(entry, "/") {
		p, err := netip.ParsePrefix(entry)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("address range %q is not a valid CIDR prefix: %w", entry, err)
		}
		return normalizePrefix(p), nil
	}
	a, err := netip.ParseAddr(entry)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("address range %q is neither a CIDR nor an IP address", entry)
	}
	if a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("address range %q has a zone; give the address without it", entry)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// FormatPrefixes prints prefixes as ParsePrefixes reads them.
func FormatPrefixes(ps []netip.Prefix) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	return strings.Join(parts, ",")
}

// PrefixList is a flag.Value holding a list of prefixes. Set replaces the
// list with the parsed value (so a default list is replaced, not extended)
// and leaves it unchanged on error.
type PrefixList []netip.Prefix

// String prints the list as ParsePrefixes reads it.
func (l *PrefixList) String() string {
	if l == nil {
		return ""
	}
	return FormatPrefixes(*l)
}

// Set replaces the list with the prefixes parsed from s.
func (l *PrefixList) Set(s string) error {
	ps, err := ParsePrefixes(s)
	if err != nil {
		return err
	}
	*l = ps
	return nil
}

// Type names the value kind, for flag libraries that print it.
func (l *PrefixList) Type() string { return "prefixes" }
