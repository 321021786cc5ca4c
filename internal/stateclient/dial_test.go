package stateclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/infrastate/backend-operator/internal/netguard"
)

// tableResolver resolves test names from a table, never through DNS.
type tableResolver map[string][]netip.Addr

func (r tableResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if addrs, ok := r[host]; ok {
		return addrs, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// loopbackDialer dials loopback IP literals only and fails the test when
// asked for anything else, so that no packet leaves the machine.
type loopbackDialer struct {
	t      *testing.T
	mu     sync.Mutex
	dialed []string
}

func (d *loopbackDialer) dial(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.dialed = append(d.dialed, address)
	d.mu.Unlock()
	host, _, err := net.SplitHostPort(address)
	if a, perr := netip.ParseAddr(host); err != nil || perr != nil || !a.IsLoopback() {
		d.t.Errorf("asked to dial %s: only loopback IP literals may be dialled", address)
		return nil, errors.New("refused by the test")
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, address)
}

// TestWithDialContext checks that the client connects through the dial
// function it is given: with a netguard.Dialer, a name resolving to the
// metadata service is refused without a packet and without a retry, and a
// name resolving to a denied and a loopback address reaches the loopback
// one.
func TestWithDialContext(t *testing.T) {
	t.Parallel()
	srv := newServer(t, respond(http.StatusOK, smallState))
	u, _ := url.Parse(srv.URL)
	port := u.Port()
	resolver := tableResolver{
		"metadata.test": {netip.MustParseAddr("169.254.169.254")},
		"mixed.test":    {netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("127.0.0.1")},
	}
	cases := map[string]struct {
		host       string
		wantDenied bool
	}{
		"metadata name": {host: "metadata.test", wantDenied: true},
		"mixed name":    {host: "mixed.test"},
		"metadata IP":   {host: "169.254.169.254", wantDenied: true},
		"loopback IP":   {host: "127.0.0.1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := &loopbackDialer{t: t}
			guard := &netguard.Dialer{Policy: netguard.DefaultPolicy(), Resolver: resolver, Dial: base.dial}
			before := len(srv.requests())
			cfg := fastConfig("http://" + net.JoinHostPort(tc.host, port))
			// A transport without a proxy: the test must not depend on the
			// environment's proxy settings.
			c := mustNew(t, cfg, WithTransport(&http.Transport{}), WithDialContext(guard.DialContext))
			data, err := fetchAll(ctxT(t), c)
			if tc.wantDenied {
				if !errors.Is(err, netguard.ErrAddressDenied) {
					t.Fatalf("StreamState() error %v, want ErrAddressDenied", err)
				}
				var re *RetryError
				if !errors.As(err, &re) || re.Attempts != 1 {
					t.Errorf("error %v: want a *RetryError after 1 attempt (a denial is not retried)", err)
				}
				if !strings.Contains(err.Error(), "--"+netguard.DeniedFlag) || !strings.Contains(err.Error(), tc.host) {
					t.Errorf("error %q does not name the host and the setting", err)
				}
				if len(base.dialed) != 0 {
					t.Errorf("dialled %v", base.dialed)
				}
				return
			}
			if err != nil || string(data) != smallState {
				t.Fatalf("StreamState() read %q, %v; want the state", data, err)
			}
			if want := net.JoinHostPort("127.0.0.1", port); len(base.dialed) != 1 || base.dialed[0] != want {
				t.Errorf("dialled %v, want [%s]", base.dialed, want)
			}
			if n := len(srv.requests()) - before; n < 1 {
				t.Errorf("the server saw %d new requests", n)
			}
		})
	}
}
