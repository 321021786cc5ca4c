package controllers

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"

	"github.com/infrastate/backend-operator/internal/netguard"
)

func TestLogRefusals(t *testing.T) {
	var lc net.ListenConfig
	l, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	closed, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	cases := map[string]struct {
		denied  []netip.Prefix
		address string
		wantLog bool
	}{
		"allowed":           {address: l.Addr().String()},
		"other dial errors": {address: closedAddr},
		"denied":            {denied: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, address: l.Addr().String(), wantLog: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var lines []string
			log := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})
			dial := logRefusals(log, (&netguard.Dialer{Policy: netguard.Policy{Denied: tc.denied}}).DialContext)
			conn, err := dial(context.Background(), "tcp", tc.address)
			if conn != nil {
				conn.Close()
			}
			if !tc.wantLog {
				if len(lines) != 0 {
					t.Errorf("dial(%s) = %v, logged %q; want no log", tc.address, err, lines)
				}
				return
			}
			if len(lines) != 1 || !strings.Contains(lines[0], `"address"="`+tc.address+`"`) ||
				!strings.Contains(lines[0], "refused by the address policy") {
				t.Errorf("dial(%s) = %v, logged %q; want one line naming the address and the refusal", tc.address, err, lines)
			}
		})
	}
}
