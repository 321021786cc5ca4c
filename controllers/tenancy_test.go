package controllers

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/infrastate/backend-operator/internal/netguard"
	"github.com/infrastate/backend-operator/internal/stateserver"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// hungServer accepts TCP connections on loopback and never answers them.
func hungServer(ctx context.Context) string {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	}()
	DeferCleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// rateLimitingServer answers every request 429 with Retry-After: 3600.
func rateLimitingServer() string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	DeferCleanup(srv.Close)
	return srv.URL
}

var _ = Describe("Tenant isolation", func() {
	It("renders and probes a new backend within seconds while another tenant's servers hang", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		DeferCleanup(cancel)
		hostile, victim := newNamespace(ctx), newNamespace(ctx)
		startManagerFor(ctx, []string{hostile, victim}, WithMaxConcurrentReconciles(4))

		By("a tenant whose three servers never answer and whose fourth asks to wait an hour")
		hung, limited := hungServer(ctx), rateLimitingServer()
		for i, address := range []string{hung, hung, hung, limited} {
			b := builders.MakeHttpBackend("slow-"+string(rune('a'+i)), hostile, address+"/state/x")
			if address == hung {
				b.Retries(0, 0, 0) // one attempt, bounded by the attempt timeout
			} else {
				b.Retries(2, 1, 2) // Retry-After: 3600 is capped at retryWaitMax
			}
			create(ctx, b.Obj())
		}
		// Their probes are under way once they are rendered.
		Eventually(func(g Gomega) {
			for i := range 4 {
				renderedConfigMap(ctx, g, hostile, "slow-"+string(rune('a'+i))+"-backend")
			}
		}, timeout, interval).Should(Succeed())

		By("another tenant's new backend is rendered and Ready within seconds")
		create(ctx, builders.MakeSecret("pw", victim).Data(map[string]string{"password": statePassword}).Obj())
		backend := builders.MakeHttpBackend("app", victim, stateURL(victim)).BasicAuth(stateUser, "pw", "").Obj()
		start := time.Now()
		create(ctx, backend)
		eventuallyWithin(ctx, 15*time.Second, backend, func(g Gomega) {
			expectCondition(g, backend.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
		})
		GinkgoWriter.Printf("Ready after %s while the other tenant's probes hang\n", time.Since(start))

		By("the hostile backends are reported, not left in progress forever")
		Eventually(func(g Gomega) {
			for i := range 4 {
				b := builders.MakeHttpBackend("slow-"+string(rune('a'+i)), hostile, "").Obj()
				getObject(ctx, g, b)
				expectCondition(g, b.Status.Conditions, "StateReachable", metav1.ConditionFalse, map[bool]string{true: "ServerError", false: "Unreachable"}[i == 3])
			}
		}, time.Minute, time.Second).Should(Succeed())
	})
})

var _ = Describe("The address policy", func() {
	It("refuses at connection time, without sending anything, an address the policy denies", func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		DeferCleanup(cancel)
		ns := newNamespace(ctx)
		counting := stateserver.New(stateserver.NewMemoryStore(), stateserver.WithRequestCounting())
		srv := httptest.NewServer(counting)
		DeferCleanup(srv.Close)
		// Deny loopback, where the test servers are: the only address a
		// test may send to is the one being denied, so a leak shows in the
		// server's request count.
		startManager(ctx, ns, WithAddressPolicy(netguard.Policy{Denied: []netip.Prefix{
			netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"),
		}}))

		// localhost resolves to loopback: the check is on the resolved
		// address, not on what the spec says.
		address := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/state/x"
		backend := builders.MakeHttpBackend("app", ns, address).Locks().LockCheck().Obj()
		create(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			expectConditionSaying(g, backend.Status.Conditions, "StateReachable", metav1.ConditionFalse, "AddressDenied",
				"refused by the address policy", "--denied-address-cidrs")
		})
		Expect(counting.Requests("", "")).To(BeZero(), "a request reached the denied address")
	})

	It("refuses an unspecified address whatever the lists say, without sending anything", func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		DeferCleanup(cancel)
		ns := newNamespace(ctx)
		// The name resolves to 0.0.0.0, as blocking resolvers answer, under
		// a policy that allows every address: on Linux a connection to
		// 0.0.0.0 reaches the local host. The suite's final dial refuses
		// and reports an attempt at 0.0.0.0, which is not loopback.
		startManager(ctx, ns, withResolver(sinkholeResolver{}), WithAddressPolicy(netguard.Policy{Allowed: []netip.Prefix{
			netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0"),
		}}))

		backend := builders.MakeHttpBackend("app", ns, "http://sinkhole.test:8080/state/x").Obj()
		create(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			expectConditionSaying(g, backend.Status.Conditions, "StateReachable", metav1.ConditionFalse, "AddressDenied",
				"refused the backend's address, and nothing was sent")
		})
	})
})

// sinkholeResolver answers every name with the unspecified addresses, as
// a resolver that blocks names does, without sending a query.
type sinkholeResolver struct{}

// LookupNetIP implements netguard.Resolver.
func (sinkholeResolver) LookupNetIP(_ context.Context, network, _ string) ([]netip.Addr, error) {
	switch network {
	case "ip4":
		return []netip.Addr{netip.IPv4Unspecified()}, nil
	case "ip6":
		return []netip.Addr{netip.IPv6Unspecified()}, nil
	}
	return []netip.Addr{netip.IPv4Unspecified(), netip.IPv6Unspecified()}, nil
}
