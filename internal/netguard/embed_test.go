package netguard

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestEmbeddedIPv4(t *testing.T) {
	t.Parallel()
	v4 := netip.MustParseAddr
	cases := map[string]struct {
		addr string
		want []Embedding
	}{
		"IPv4":                            {addr: "169.254.169.254"},
		"IPv4-mapped is unmapped instead": {addr: "::ffff:169.254.169.254"},
		"IPv6 unspecified":                {addr: "::"},
		"IPv6 loopback":                   {addr: "::1"},
		"link-local":                      {addr: "fe80::a9fe:a9fe"},
		"global unicast":                  {addr: "2a00:1450::a9fe:a9fe"},
		"documentation, next to Teredo":   {addr: "2001:db8::a9fe:a9fe"},
		"IPv4-compatible, dotted":         {addr: "::169.254.169.254", want: []Embedding{{Form: FormIPv4Compatible, IPv4: v4("169.254.169.254")}}},
		"IPv4-compatible, hex":            {addr: "::a9fe:a9fe", want: []Embedding{{Form: FormIPv4Compatible, IPv4: v4("169.254.169.254")}}},
		"IPv4-compatible with a zone":     {addr: "::a9fe:a9fe%eth0", want: []Embedding{{Form: FormIPv4Compatible, IPv4: v4("169.254.169.254")}}},
		"IPv4-compatible 0.0.0.2":         {addr: "::2", want: []Embedding{{Form: FormIPv4Compatible, IPv4: v4("0.0.0.2")}}},
		"IPv4-compatible, 0.1.0.0":        {addr: "::1:0", want: []Embedding{{Form: FormIPv4Compatible, IPv4: v4("0.1.0.0")}}},
		"outside IPv4-compatible":         {addr: "::1:0:0"},
		"NAT64":                           {addr: "64:ff9b::169.254.169.254", want: []Embedding{{Form: FormNAT64, IPv4: v4("169.254.169.254")}}},
		"NAT64, hex":                      {addr: "64:ff9b::6464:64c8", want: []Embedding{{Form: FormNAT64, IPv4: v4("100.100.100.200")}}},
		"64:ff9b::/32 beyond the /96":     {addr: "64:ff9b::1:a9fe:a9fe"},
		"local-use NAT64, /96 layout": {addr: "64:ff9b:1::a9fe:a9fe", want: []Embedding{
			{Form: FormNAT64Local48, IPv4: v4("0.0.0.0")},
			{Form: FormNAT64Local56, IPv4: v4("0.0.0.0")},
			{Form: FormNAT64Local64, IPv4: v4("0.0.0.169")},
			{Form: FormNAT64Local96, IPv4: v4("169.254.169.254")},
		}},
		// 169.254.169.254 as RFC 6052 places it after a /48 prefix: octets
		// 1 and 2 in bits 48-63, bits 64-71 zero, octets 3 and 4 in bits
		// 72-87.
		"local-use NAT64, /48 layout": {addr: "64:ff9b:1:a9fe:a9:fe00::", want: []Embedding{
			{Form: FormNAT64Local48, IPv4: v4("169.254.169.254")},
			{Form: FormNAT64Local56, IPv4: v4("254.169.254.0")},
			{Form: FormNAT64Local64, IPv4: v4("169.254.0.0")},
			{Form: FormNAT64Local96, IPv4: v4("0.0.0.0")},
		}},
		// After a /56 prefix: octet 1 in bits 56-63, octets 2 to 4 in bits
		// 72-95.
		"local-use NAT64, /56 layout": {addr: "64:ff9b:1:a9:fe:a9fe::", want: []Embedding{
			{Form: FormNAT64Local48, IPv4: v4("0.169.254.169")},
			{Form: FormNAT64Local56, IPv4: v4("169.254.169.254")},
			{Form: FormNAT64Local64, IPv4: v4("254.169.254.0")},
			{Form: FormNAT64Local96, IPv4: v4("0.0.0.0")},
		}},
		// After a /64 prefix: the four octets in bits 72-103.
		"local-use NAT64, /64 layout": {addr: "64:ff9b:1:0:a9:fea9:fe00:0", want: []Embedding{
			{Form: FormNAT64Local48, IPv4: v4("0.0.169.254")},
			{Form: FormNAT64Local56, IPv4: v4("0.169.254.169")},
			{Form: FormNAT64Local64, IPv4: v4("169.254.169.254")},
			{Form: FormNAT64Local96, IPv4: v4("254.0.0.0")},
		}},
		"outside local-use NAT64": {addr: "64:ff9b:2::a9fe:a9fe"},
		"6to4":                    {addr: "2002:a9fe:a9fe::1", want: []Embedding{{Form: Form6to4, IPv4: v4("169.254.169.254")}}},
		"6to4, a subnet and host": {addr: "2002:c000:204:7:1:2:3:4", want: []Embedding{{Form: Form6to4, IPv4: v4("192.0.2.4")}}},
		// RFC 4380's example: server 65.54.227.120, client 192.0.2.45
		// behind a cone NAT at port 40000.
		"SIIT, the metadata":       {addr: "::ffff:0:a9fe:a9fe", want: []Embedding{{Form: FormSIIT, IPv4: v4("169.254.169.254")}}},
		"SIIT, loopback":           {addr: "::ffff:0:7f00:1", want: []Embedding{{Form: FormSIIT, IPv4: v4("127.0.0.1")}}},
		"Teredo, RFC 4380 example": {addr: "2001:0:4136:e378:8000:63bf:3fff:fdd2", want: []Embedding{{Form: FormTeredo, IPv4: v4("192.0.2.45")}}},
		"Teredo, the metadata":     {addr: "2001:0:4136:e378:8000:63bf:5601:5601", want: []Embedding{{Form: FormTeredo, IPv4: v4("169.254.169.254")}}},
		"Teredo, all ones":         {addr: "2001::ffff:ffff", want: []Embedding{{Form: FormTeredo, IPv4: v4("0.0.0.0")}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := embeddedIPv4(netip.MustParseAddr(tc.addr))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
				t.Errorf("embeddedIPv4(%s) mismatch (-want +got):\n%s", tc.addr, diff)
			}
		})
	}
}
