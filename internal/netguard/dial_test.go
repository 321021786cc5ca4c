package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeResolver answers from a table and records the lookups.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]string
	lookups []string // "network host"
}

func (r *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.lookups = append(r.lookups, network+" "+host)
	r.mu.Unlock()
	answer, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, s := range answer {
		a := netip.MustParseAddr(s)
		if network == "ip4" && !a.Unmap().Is4() || network == "ip6" && a.Is4() {
			continue
		}
		out = append(out, a)
	}
	return out, nil
}

func testResolver() *fakeResolver {
	return &fakeResolver{answers: map[string][]string{
		"metadata.test":     {"169.254.169.254"},
		"tencent.test":      {"169.254.0.23"},
		"alibaba.test":      {"100.100.100.200"},
		"aws-v6.test":       {"fd00:ec2::254"},
		"mapped.test":       {"::ffff:169.254.169.254"},
		"mixed.test":        {"169.254.169.254", "127.0.0.1"},
		"mixed-v6.test":     {"fd00:ec2::254", "::1", "127.0.0.1"},
		"loop.test":         {"127.0.0.1"},
		"mapped-loop.test":  {"::ffff:127.0.0.1"},
		"two.test":          {"127.0.0.2", "127.0.0.1"},
		"all-denied.test":   {"169.254.169.254", "fe80::1", "100.100.100.200"},
		"empty-answer.test": {},
		"sinkhole.test":     {"0.0.0.0"},
		"sinkhole-v6.test":  {"::", "::ffff:0.0.0.0"},
		"6to4.test":         {"2002:a9fe:a9fe::1"},
		"teredo-mixed.test": {"2001:0:4136:e378:8000:63bf:5601:5601", "::1"},
	}}
}

// loopbackOnly is a base dial function that never touches the network: it
// fails the test when asked for anything but a loopback IP literal, fails
// the addresses in refuse, and otherwise returns one end of a pipe.
type loopbackOnly struct {
	t      *testing.T
	refuse []string
	mu     sync.Mutex
	dialed []string
}

func (d *loopbackOnly) dial(_ context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.dialed = append(d.dialed, network+" "+address)
	d.mu.Unlock()
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		d.t.Errorf("base dial got %q: %v", address, err)
		return nil, err
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !a.IsLoopback() {
		d.t.Errorf("base dial asked for %s %s: only loopback IP literals may be dialled", network, address)
		return nil, errors.New("refused by the test")
	}
	if slices.Contains(d.refuse, address) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("connect %s: connection refused", address)}
	}
	client, server := net.Pipe()
	d.t.Cleanup(func() { server.Close() })
	return client, nil
}

func TestDialerDialContext(t *testing.T) {
	t.Parallel()
	tenOnly := Policy{Allowed: prefixes("10.0.0.0/8"), Denied: DefaultDenied()}
	everywhere := Policy{Allowed: prefixes("0.0.0.0/0", "::/0")}
	cases := map[string]struct {
		policy      *Policy // nil: DefaultPolicy
		network     string  // "" means tcp
		address     string
		refuse      []string // base dial fails these
		wantDialed  []string // base dial calls, "network address"
		wantLookup  []string // resolver calls
		wantDenied  bool
		wantText    []string // substrings of the error
		wantOtherEr bool     // an error other than a denial
	}{
		"metadata name":            {address: "metadata.test:80", wantLookup: []string{"ip metadata.test"}, wantDenied: true, wantText: []string{"metadata.test", "port 80", "169.254.169.254", "--denied-address-cidrs"}},
		"Tencent metadata name":    {address: "tencent.test:80", wantDenied: true, wantText: []string{"169.254.0.23"}},
		"Alibaba metadata name":    {address: "alibaba.test:80", wantDenied: true, wantText: []string{"100.100.100.200"}},
		"AWS IPv6 metadata":        {address: "aws-v6.test:80", wantDenied: true, wantText: []string{"fd00:ec2::254"}},
		"mapped answer":            {address: "mapped.test:80", wantDenied: true, wantText: []string{"169.254.169.254 is in the denied range"}},
		"all denied":               {address: "all-denied.test:8443", wantDenied: true, wantText: []string{"port 8443", "169.254.169.254", "fe80::1", "100.100.100.200"}},
		"mixed: the allowed one":   {address: "mixed.test:80", wantDialed: []string{"tcp 127.0.0.1:80"}},
		"mixed IPv6":               {address: "mixed-v6.test:443", wantDialed: []string{"tcp [::1]:443"}},
		"mixed, tcp4":              {network: "tcp4", address: "mixed-v6.test:443", wantLookup: []string{"ip4 mixed-v6.test"}, wantDialed: []string{"tcp4 127.0.0.1:443"}},
		"mapped loopback":          {address: "mapped-loop.test:80", wantDialed: []string{"tcp 127.0.0.1:80"}},
		"fallback to the next":     {address: "two.test:80", refuse: []string{"127.0.0.2:80"}, wantDialed: []string{"tcp 127.0.0.2:80", "tcp 127.0.0.1:80"}},
		"every dial fails":         {address: "two.test:80", refuse: []string{"127.0.0.2:80", "127.0.0.1:80"}, wantDialed: []string{"tcp 127.0.0.2:80", "tcp 127.0.0.1:80"}, wantOtherEr: true, wantText: []string{"127.0.0.2:80"}},
		"metadata literal":         {address: "169.254.169.254:80", wantLookup: []string{}, wantDenied: true, wantText: []string{"host 169.254.169.254 port 80"}},
		"mapped literal":           {address: "[::ffff:169.254.169.254]:80", wantLookup: []string{}, wantDenied: true},
		"zoned link-local":         {address: "[fe80::1%eth0]:80", wantLookup: []string{}, wantDenied: true},
		"loopback literal":         {address: "127.0.0.1:80", wantLookup: []string{}, wantDialed: []string{"tcp 127.0.0.1:80"}},
		"IPv6 loopback literal":    {address: "[::1]:80", wantLookup: []string{}, wantDialed: []string{"tcp [::1]:80"}},
		"outside allowed":          {policy: &tenOnly, address: "loop.test:80", wantDenied: true, wantText: []string{"outside the allowed ranges", "--allowed-address-cidrs"}},
		"unknown name":             {address: "nowhere.test:80", wantOtherEr: true, wantText: []string{"no such host"}},
		"no addresses":             {address: "empty-answer.test:80", wantOtherEr: true, wantText: []string{"no addresses"}},
		"udp is not supported":     {network: "udp", address: "loop.test:53", wantLookup: []string{}, wantOtherEr: true, wantText: []string{"udp"}},
		"no port":                  {address: "loop.test", wantLookup: []string{}, wantOtherEr: true},
		"no host":                  {address: ":80", wantLookup: []string{}, wantOtherEr: true},
		"unspecified literal":      {address: "0.0.0.0:80", wantLookup: []string{}, wantDenied: true, wantText: []string{"host 0.0.0.0 port 80", "0.0.0.0 is an unspecified address"}},
		"IPv6 unspecified":         {address: "[::]:80", wantLookup: []string{}, wantDenied: true, wantText: []string{":: is an unspecified address"}},
		"mapped unspecified":       {address: "[::ffff:0.0.0.0]:80", wantLookup: []string{}, wantDenied: true, wantText: []string{"0.0.0.0 is an unspecified address"}},
		"unspecified, tcp4":        {network: "tcp4", address: "0.0.0.0:80", wantLookup: []string{}, wantDenied: true},
		"unspecified, all allowed": {policy: &everywhere, address: "0.0.0.0:80", wantLookup: []string{}, wantDenied: true},
		"a name resolving to it":   {policy: &everywhere, address: "sinkhole.test:80", wantDenied: true, wantText: []string{"host sinkhole.test", "0.0.0.0 is an unspecified address"}},
		"a 6to4 answer":            {address: "6to4.test:443", wantDenied: true, wantText: []string{"2002:a9fe:a9fe::1 embeds 169.254.169.254 (6to4, 2002::/16)"}},
		"Teredo answer skipped":    {address: "teredo-mixed.test:443", wantDialed: []string{"tcp [::1]:443"}},
		"IPv4-compatible literal":  {address: "[::169.254.169.254]:80", wantLookup: []string{}, wantDenied: true, wantText: []string{"embeds 169.254.169.254 (IPv4-compatible, ::/96)"}},
		"local-use NAT64 literal":  {address: "[64:ff9b:1::a9fe:a9fe]:80", wantLookup: []string{}, wantDenied: true, wantText: []string{"embeds 169.254.169.254 (local-use NAT64, 64:ff9b:1::/48 with a /96 prefix)"}},
		"IPv6 sinkhole answers":    {policy: &everywhere, address: "sinkhole-v6.test:80", wantDenied: true, wantText: []string{":: is an unspecified address", "0.0.0.0 is an unspecified address"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			policy := DefaultPolicy()
			if tc.policy != nil {
				policy = *tc.policy
			}
			base := &loopbackOnly{t: t, refuse: tc.refuse}
			res := testResolver()
			d := &Dialer{Policy: policy, Resolver: res, Dial: base.dial}
			network := tc.network
			if network == "" {
				network = "tcp"
			}
			conn, err := d.DialContext(context.Background(), network, tc.address)
			if conn != nil {
				conn.Close()
			}
			wantErr := tc.wantDenied || tc.wantOtherEr
			if (err != nil) != wantErr {
				t.Fatalf("DialContext(%s, %s) error %v, want error %v", network, tc.address, err, wantErr)
			}
			if got := errors.Is(err, ErrAddressDenied); got != tc.wantDenied {
				t.Errorf("errors.Is(%v, ErrAddressDenied) = %v, want %v", err, got, tc.wantDenied)
			}
			if tc.wantDenied {
				if _, ok := errors.AsType[*DeniedError](err); !ok {
					t.Errorf("error %v is not a *DeniedError", err)
				}
				if strings.ContainsRune(err.Error(), '"') {
					t.Errorf("denial %q contains a double quote", err)
				}
			}
			for _, s := range tc.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if diff := cmp.Diff(tc.wantDialed, base.dialed); diff != "" {
				t.Errorf("base dial calls mismatch (-want +got):\n%s", diff)
			}
			if tc.wantLookup != nil {
				if diff := cmp.Diff(tc.wantLookup, res.lookups, cmp.Transformer("nil", func(s []string) []string {
					if s == nil {
						return []string{}
					}
					return s
				})); diff != "" {
					t.Errorf("lookups mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestDialerRealLoopback dials through the default base dial function to
// a loopback listener, by name, and checks the bytes arrive.
func TestDialerRealLoopback(t *testing.T) {
	t.Parallel()
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- string(b)
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	d := &Dialer{Policy: DefaultPolicy(), Resolver: testResolver()}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort("mixed.test", port))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "hello"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	select {
	case s := <-got:
		if s != "hello" {
			t.Errorf("the listener read %q, want hello", s)
		}
	case <-ctx.Done():
		t.Fatal("the listener read nothing")
	}
}

// TestDialerCancelled checks that a cancelled context stops the dial
// before any connection attempt.
func TestDialerCancelled(t *testing.T) {
	t.Parallel()
	base := &loopbackOnly{t: t}
	d := &Dialer{Policy: DefaultPolicy(), Resolver: testResolver(), Dial: base.dial}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.DialContext(ctx, "tcp", "two.test:80"); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if len(base.dialed) != 0 {
		t.Errorf("dialled %v after cancellation", base.dialed)
	}
}
