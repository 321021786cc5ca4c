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
// connection to them reaches the local host. A Dialer applies a Policy
// when a connection is made, to the addresses a name resolves to at that
// moment, and connects to the checked IP address itself: a DNS name
// cannot point at a denied address, and a second DNS answer cannot differ
// from the one checked (no rebinding between check and connect).
//
// Through an HTTP proxy the Dialer sees, and checks, the proxy's address
// only: the proxy connects to the server.
package netguard
