// Package circuit pauses the requests of one namespace to a server
// address that left a request unanswered, so that a server which accepts
// connections and never answers costs one attempt timeout, not one per
// probe, per retry and per backend.
//
// A circuit belongs to a namespace and an address (scheme://host:port of
// a request's URL, see Address): one tenant's requests cannot open the
// circuit of a server another tenant uses. It opens when a request times
// out: no answer within its deadline (an attempt timeout, the caller's
// deadline, a net.Error whose Timeout is true, such as a response header
// or TLS handshake timeout). Errors that come fast and tell the truth (a
// refused connection, a TLS error) and answers of any status do not open
// it. While it is open, every request of the namespace to the address
// fails at once with an *OpenError (matching ErrOpen) that says since
// when and until when; after the cool-down one trial request goes
// through, the others still failing at once until it ends. An answer
// closes the circuit; a trial without an answer opens it again for twice
// the cool-down, up to a maximum (30 s, doubling, at most 5 minutes by
// default).
//
// Breakers holds the circuits and is shared by every client of a manager;
// Breakers.Transport wraps an http.RoundTripper with the circuits of one
// namespace. The state machine (Allow, Ticket.Done) is pure apart from
// its clock, which tests replace.
package circuit
