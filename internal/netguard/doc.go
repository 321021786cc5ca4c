// Package netguard decides which IP addresses the operator may connect to
// on a tenant's behalf, and enforces it when connecting.
//
// A tenant names the addresses the operator's probes reach (a state
// server's address, lock and unlock addresses). The operator runs with
// cluster-wide rights inside the cluster network, so an address must not
// let a tenant reach what only the operator can: above all the cloud
// instance metadata services, which hand out the node's cloud credentials.
//
// A Policy is a list of denied and a list of allowed IP prefixes. The
// default denies link-local addresses and the well-known metadata
// addresses outside link-local (DefaultDenied). No Policy allows the
// unspecified addresses 0.0.0.0 and :: (nor ::ffff:0.0.0.0): on Linux a
// connection to them reaches the local host. An IPv6 address that embeds
// an IPv4 address (IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::/96 and the
// local-use 64:ff9b:1::/48, 6to4 2002::/16, Teredo 2001::/32) is refused
// when the IPv4 address is in a denied range: a translator, relay or
// tunnel would deliver it there.
//
// A Dialer applies a Policy when a connection is made, to the addresses a
// name resolves to at that moment, and connects to the checked IP address
// itself: a DNS name cannot point at a denied address, and a second DNS
// answer cannot differ from the one checked (no rebinding between check
// and connect).
//
// Through an HTTP proxy the Dialer sees, and checks, the proxy's address
// only: the proxy connects to the server.
package netguard
