package netguard

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPolicyAllows(t *testing.T) {
	t.Parallel()
	def := DefaultPolicy()
	tenOnly := Policy{Allowed: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Denied: DefaultDenied()}
	overlap := Policy{
		Allowed: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("169.254.169.254/32")},
		Denied:  append(DefaultDenied(), netip.MustParsePrefix("10.0.0.0/24")),
	}
	mappedLists := Policy{
		Allowed: []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")},
		Denied:  []netip.Prefix{netip.MustParsePrefix("::ffff:10.9.0.0/112")},
	}
	everywhere := Policy{Allowed: prefixes("0.0.0.0/0", "::/0")}
	tenDenied := Policy{Denied: prefixes("10.0.0.0/8")}
	zeroDenied := Policy{Denied: prefixes("0.0.0.0/8")}
	mappedDenied := Policy{Denied: prefixes("::ffff:10.9.0.0/112")}
	sixToFourOnly := Policy{Allowed: prefixes("2002::/16"), Denied: DefaultDenied()}
	cases := map[string]struct {
		policy Policy
		addr   string // "" means the zero netip.Addr
		want   bool
	}{
		"default: AWS, GCP, Azure, Oracle metadata":  {policy: def, addr: "169.254.169.254", want: false},
		"default: Tencent metadata":                  {policy: def, addr: "169.254.0.23", want: false},
		"default: AWS ECS task metadata":             {policy: def, addr: "169.254.170.2", want: false},
		"default: other link-local IPv4":             {policy: def, addr: "169.254.1.1", want: false},
		"default: Alibaba metadata":                  {policy: def, addr: "100.100.100.200", want: false},
		"default: Alibaba neighbour is fine":         {policy: def, addr: "100.100.100.201", want: true},
		"default: Azure WireServer":                  {policy: def, addr: "168.63.129.16", want: false},
		"default: Oracle Classic metadata":           {policy: def, addr: "192.0.0.192", want: false},
		"default: AWS IPv6 metadata":                 {policy: def, addr: "fd00:ec2::254", want: false},
		"default: AWS IPv6 metadata, long form":      {policy: def, addr: "FD00:0EC2:0000:0000:0000:0000:0000:0254", want: false},
		"default: EKS Pod Identity IPv6":             {policy: def, addr: "fd00:ec2::23", want: false},
		"default: GCP IPv6 metadata":                 {policy: def, addr: "fd20:ce::254", want: false},
		"default: Oracle IPv6 metadata":              {policy: def, addr: "fd00:c1::a9fe:a9fe", want: false},
		"default: Scaleway IPv6 metadata":            {policy: def, addr: "fd00:42::42", want: false},
		"default: link-local IPv6":                   {policy: def, addr: "fe80::a9fe:a9fe", want: false},
		"default: link-local IPv6 with a zone":       {policy: def, addr: "fe80::1%eth0", want: false},
		"default: mapped metadata":                   {policy: def, addr: "::ffff:169.254.169.254", want: false},
		"default: mapped Alibaba metadata":           {policy: def, addr: "::ffff:100.100.100.200", want: false},
		"default: loopback":                          {policy: def, addr: "127.0.0.1", want: true},
		"default: mapped loopback":                   {policy: def, addr: "::ffff:127.0.0.1", want: true},
		"default: IPv6 loopback":                     {policy: def, addr: "::1", want: true},
		"default: private":                           {policy: def, addr: "10.1.2.3", want: true},
		"default: public":                            {policy: def, addr: "203.0.113.7", want: true},
		"default: other ULA":                         {policy: def, addr: "fd00:ec2::1", want: true},
		"default: the zero address":                  {policy: def, addr: "", want: false},
		"default: NAT64 form of the metadata":        {policy: def, addr: "64:ff9b::a9fe:a9fe", want: false},
		"default: NAT64 form of Alibaba metadata":    {policy: def, addr: "64:ff9b::6464:64c8", want: false},
		"default: NAT64 form of a private address":   {policy: def, addr: "64:ff9b::a00:1", want: true},
		"empty lists: metadata allowed":              {policy: Policy{}, addr: "169.254.169.254", want: true},
		"empty lists: anything allowed":              {policy: Policy{}, addr: "2001:db8::1", want: true},
		"empty lists: the zero address":              {policy: Policy{}, addr: "", want: false},
		"allowed list: inside":                       {policy: tenOnly, addr: "10.1.2.3", want: true},
		"allowed list: mapped inside":                {policy: tenOnly, addr: "::ffff:10.1.2.3", want: true},
		"allowed list: outside":                      {policy: tenOnly, addr: "11.0.0.1", want: false},
		"allowed list: loopback outside":             {policy: tenOnly, addr: "127.0.0.1", want: false},
		"allowed list: IPv6 outside":                 {policy: tenOnly, addr: "::1", want: false},
		"deny beats allow":                           {policy: overlap, addr: "10.0.0.5", want: false},
		"allow around a denied hole":                 {policy: overlap, addr: "10.0.1.5", want: true},
		"allowing a default-denied address is moot":  {policy: overlap, addr: "169.254.169.254", want: false},
		"mapped allowed prefix matches IPv4":         {policy: mappedLists, addr: "10.1.2.3", want: true},
		"mapped denied prefix matches IPv4":          {policy: mappedLists, addr: "10.9.1.1", want: false},
		"mapped denied prefix matches mapped":        {policy: mappedLists, addr: "::ffff:10.9.1.1", want: false},
		"mapped allowed prefix leaves others out":    {policy: mappedLists, addr: "192.168.0.1", want: false},
		"default: IPv4 unspecified":                  {policy: def, addr: "0.0.0.0", want: false},
		"default: IPv6 unspecified":                  {policy: def, addr: "::", want: false},
		"default: IPv6 unspecified, long form":       {policy: def, addr: "0:0:0:0:0:0:0:0", want: false},
		"default: mapped unspecified":                {policy: def, addr: "::ffff:0.0.0.0", want: false},
		"default: IPv6 unspecified with a zone":      {policy: def, addr: "::%eth0", want: false},
		"default: the rest of 0.0.0.0/8 is listed":   {policy: def, addr: "0.0.0.1", want: true},
		"empty lists: IPv4 unspecified":              {policy: Policy{}, addr: "0.0.0.0", want: false},
		"empty lists: IPv6 unspecified":              {policy: Policy{}, addr: "::", want: false},
		"allowed everywhere: IPv4 unspecified":       {policy: everywhere, addr: "0.0.0.0", want: false},
		"allowed everywhere: mapped unspecified":     {policy: everywhere, addr: "::ffff:0.0.0.0", want: false},
		"allowed everywhere: IPv6 unspecified":       {policy: everywhere, addr: "::", want: false},
		"allowed exactly: IPv4 unspecified":          {policy: Policy{Allowed: prefixes("0.0.0.0/32")}, addr: "0.0.0.0", want: false},
		"default: IPv4-compatible metadata":          {policy: def, addr: "::169.254.169.254", want: false},
		"default: IPv4-compatible Azure WireServer":  {policy: def, addr: "::a83f:8110", want: false},
		"default: local-use NAT64 metadata":          {policy: def, addr: "64:ff9b:1::a9fe:a9fe", want: false},
		"default: local-use NAT64 metadata, /48":     {policy: def, addr: "64:ff9b:1:a9fe:a9:fe00::", want: false},
		"default: local-use NAT64 metadata, /64":     {policy: def, addr: "64:ff9b:1:0:a9:fea9:fe00:0", want: false},
		"default: local-use NAT64 of a public host":  {policy: def, addr: "64:ff9b:1::cb00:7107", want: true},
		"default: 6to4 metadata":                     {policy: def, addr: "2002:a9fe:a9fe::1", want: false},
		"default: 6to4 Alibaba metadata":             {policy: def, addr: "2002:6464:64c8::", want: false},
		"default: 6to4 of a public host":             {policy: def, addr: "2002:cb00:7107::1", want: true},
		"default: SIIT metadata":                     {policy: def, addr: "::ffff:0:a9fe:a9fe", want: false},
		"default: SIIT of a public host":             {policy: def, addr: "::ffff:0:cb00:7107", want: true},
		"default: Teredo metadata":                   {policy: def, addr: "2001:0:4136:e378:8000:63bf:5601:5601", want: false},
		"default: Teredo Oracle Classic metadata":    {policy: def, addr: "2001::3fff:ff3f", want: false},
		"default: Teredo of a public host":           {policy: def, addr: "2001:0:4136:e378:8000:63bf:3fff:fdd2", want: true},
		"default: Teredo's neighbour is not Teredo":  {policy: def, addr: "2001:db8::5601:5601", want: true},
		"denied IPv4 list: its 6to4 form":            {policy: tenDenied, addr: "2002:a01:203::1", want: false},
		"denied IPv4 list: its NAT64 form":           {policy: tenDenied, addr: "64:ff9b::10.1.2.3", want: false},
		"denied IPv4 list: its Teredo form":          {policy: tenDenied, addr: "2001::f5fe:fdfc", want: false},
		"denied IPv4 list: its IPv4-compatible form": {policy: tenDenied, addr: "::10.1.2.3", want: false},
		"denied IPv4 list: other 6to4 addresses":     {policy: tenDenied, addr: "2002:b01:203::1", want: true},
		"mapped denied prefix: its 6to4 form":        {policy: mappedDenied, addr: "2002:a09:101::1", want: false},
		"allowed 6to4, denied embedded IPv4":         {policy: sixToFourOnly, addr: "2002:a9fe:a9fe::1", want: false},
		"allowed 6to4, allowed embedded IPv4":        {policy: sixToFourOnly, addr: "2002:cb00:7107::1", want: true},
		"embedding does not widen the allowed list":  {policy: tenOnly, addr: "2002:a01:203::1", want: false},
		"denying 0.0.0.0/8 leaves ::1 alone":         {policy: zeroDenied, addr: "::1", want: true},
		"denying 0.0.0.0/8 denies ::2":               {policy: zeroDenied, addr: "::2", want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var addr netip.Addr
			if tc.addr != "" {
				addr = netip.MustParseAddr(tc.addr)
			}
			if got := tc.policy.Allows(addr); got != tc.want {
				t.Errorf("Allows(%s) = %v, want %v (refusal %v)", tc.addr, got, tc.want, tc.policy.Check(addr))
			}
			if got := tc.policy.Check(addr) == nil; got != tc.want {
				t.Errorf("Check(%s) == nil is %v, want %v", tc.addr, got, tc.want)
			}
		})
	}
}

// TestRefusal checks what a refusal says: the address, why, and which
// setting would allow it.
func TestRefusal(t *testing.T) {
	t.Parallel()
	tenOnly := Policy{Allowed: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Denied: DefaultDenied()}
	cases := map[string]struct {
		policy      Policy
		addr        string
		wantDenied  netip.Prefix
		wantVia     Embedding
		wantSetting string
		wantText    string
	}{
		"denied range": {
			policy: DefaultPolicy(), addr: "169.254.169.254",
			wantDenied: netip.MustParsePrefix("169.254.0.0/16"), wantSetting: DeniedFlag,
			wantText: "169.254.169.254 is in the denied range 169.254.0.0/16 (--denied-address-cidrs)",
		},
		"mapped, reported unmapped": {
			policy: DefaultPolicy(), addr: "::ffff:100.100.100.200",
			wantDenied: netip.MustParsePrefix("100.100.100.200/32"), wantSetting: DeniedFlag,
			wantText: "100.100.100.200 is in the denied range 100.100.100.200/32 (--denied-address-cidrs)",
		},
		"outside the allowed ranges": {
			policy: tenOnly, addr: "127.0.0.1", wantSetting: AllowedFlag,
			wantText: "127.0.0.1 is outside the allowed ranges (--allowed-address-cidrs)",
		},
		"unspecified, whatever the lists say": {
			policy: Policy{Allowed: prefixes("0.0.0.0/0")}, addr: "0.0.0.0",
			wantText: "0.0.0.0 is an unspecified address, which is never allowed: a connection to it reaches the local host",
		},
		"mapped unspecified, reported unmapped": {
			policy: DefaultPolicy(), addr: "::ffff:0.0.0.0",
			wantText: "0.0.0.0 is an unspecified address, which is never allowed: a connection to it reaches the local host",
		},
		"an embedded IPv4 address in a denied range": {
			policy: DefaultPolicy(), addr: "2002:a9fe:a9fe::1",
			wantDenied: netip.MustParsePrefix("169.254.0.0/16"), wantSetting: DeniedFlag,
			wantVia:  Embedding{Form: Form6to4, IPv4: netip.MustParseAddr("169.254.169.254")},
			wantText: "2002:a9fe:a9fe::1 embeds 169.254.169.254 (6to4, 2002::/16), which is in the denied range 169.254.0.0/16 (--denied-address-cidrs)",
		},
		"a listed NAT64 form is denied as itself": {
			policy: DefaultPolicy(), addr: "64:ff9b::a9fe:a9fe",
			wantDenied: netip.MustParsePrefix("64:ff9b::a9fe:0/112"), wantSetting: DeniedFlag,
			wantText: "64:ff9b::a9fe:a9fe is in the denied range 64:ff9b::a9fe:0/112 (--denied-address-cidrs)",
		},
		"IPv6 unspecified": {
			policy: DefaultPolicy(), addr: "::",
			wantText: ":: is an unspecified address, which is never allowed: a connection to it reaches the local host",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := tc.policy.Check(netip.MustParseAddr(tc.addr))
			if r == nil {
				t.Fatalf("Check(%s) = nil, want a refusal", tc.addr)
			}
			if r.DeniedBy != tc.wantDenied {
				t.Errorf("DeniedBy = %v, want %v", r.DeniedBy, tc.wantDenied)
			}
			if r.Via != tc.wantVia {
				t.Errorf("Via = %+v, want %+v", r.Via, tc.wantVia)
			}
			if got := r.Setting(); got != tc.wantSetting {
				t.Errorf("Setting() = %q, want %q", got, tc.wantSetting)
			}
			if diff := cmp.Diff(tc.wantText, r.String()); diff != "" {
				t.Errorf("String() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDefaultDenied checks the default list: every entry masked, and a
// fresh copy on every call so that callers cannot change the default.
func TestDefaultDenied(t *testing.T) {
	t.Parallel()
	a := DefaultDenied()
	if len(a) == 0 {
		t.Fatal("DefaultDenied() is empty")
	}
	for _, p := range a {
		if !p.IsValid() || p != p.Masked() {
			t.Errorf("default prefix %v is not valid and masked", p)
		}
	}
	a[0] = netip.MustParsePrefix("192.0.2.0/24")
	if b := DefaultDenied(); b[0] == a[0] {
		t.Error("DefaultDenied() returned shared storage")
	}
	for _, must := range []string{"169.254.0.0/16", "fe80::/10", "100.100.100.200/32", "fd00:ec2::254/128", "64:ff9b::a9fe:0/112"} {
		if !strings.Contains(FormatPrefixes(DefaultDenied()), must) {
			t.Errorf("the default denied list lacks %s", must)
		}
	}
}
