package netguard

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func TestParsePrefixes(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		in      string
		want    []netip.Prefix
		wantErr string // empty: no error
	}{
		"empty":                {in: ""},
		"only separators":      {in: " , ,"},
		"one CIDR":             {in: "10.0.0.0/8", want: prefixes("10.0.0.0/8")},
		"CIDRs and bare IPs":   {in: "10.0.0.0/8, 192.168.1.1 ,::1,fd00::/8", want: prefixes("10.0.0.0/8", "192.168.1.1/32", "::1/128", "fd00::/8")},
		"host bits are masked": {in: "10.1.2.3/8", want: prefixes("10.0.0.0/8")},
		"mapped CIDR":          {in: "::ffff:10.0.0.0/104", want: prefixes("10.0.0.0/8")},
		"mapped bare IP":       {in: "::ffff:169.254.169.254", want: prefixes("169.254.169.254/32")},
		"empty entries":        {in: ",10.0.0.0/8,,", want: prefixes("10.0.0.0/8")},
		"bad bits":             {in: "10.0.0.0/33", wantErr: `address range "10.0.0.0/33"`},
		"not an address":       {in: "10.0.0.0/8,example.com", wantErr: `address range "example.com" is neither a CIDR nor an IP address`},
		"zone":                 {in: "fe80::1%eth0", wantErr: `address range "fe80::1%eth0" has a zone`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := ParsePrefixes(tc.in)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ParsePrefixes(%q): %v", tc.in, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("ParsePrefixes(%q) error %v, want one containing %q", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Errorf("ParsePrefixes(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestFormatPrefixesRoundTrip(t *testing.T) {
	t.Parallel()
	in := DefaultDenied()
	out, err := ParsePrefixes(FormatPrefixes(in))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}
}

// TestPrefixListFlag checks the flag.Value: String shows the current list,
// Set replaces it, a bad value leaves it unchanged.
func TestPrefixListFlag(t *testing.T) {
	t.Parallel()
	l := PrefixList(DefaultDenied())
	if got, want := l.String(), FormatPrefixes(DefaultDenied()); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if err := l.Set("10.0.0.0/8,::1"); err != nil {
		t.Fatal(err)
	}
	if got := l.String(); got != "10.0.0.0/8,::1/128" {
		t.Errorf("after Set, String() = %q", got)
	}
	if err := l.Set("nonsense"); err == nil {
		t.Error("Set(nonsense) succeeded")
	}
	if got := l.String(); got != "10.0.0.0/8,::1/128" {
		t.Errorf("a failed Set changed the list to %q", got)
	}
	if err := l.Set(""); err != nil || len(l) != 0 {
		t.Errorf("Set(\"\") = %v, list %v; want an empty list", err, l)
	}
}
