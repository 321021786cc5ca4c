// Package stateclient is a client for Terraform's REST state protocol: the
// protocol Terraform's and OpenTofu's "http" backend speaks. The operator
// uses it to probe a backend, read and summarize its state, and see or
// release the state lock.
//
// # The protocol, as this client relies on it
//
// The state lives at one address (http or https). Reading it is a GET:
// 200 with the state as body (an empty body means no state), 204 or 404
// for no state. Update sends the state with the update method (POST unless
// configured), with the query parameter ID=<lock id> added while a lock is
// held; 200, 201 and 204 succeed. Purge is a DELETE and only 200 succeeds.
// Lock sends a LockInfo as JSON with the lock method (LOCK) to the lock
// address; 200 means acquired, 409 or 423 mean held by someone else, the
// body then naming the holder as LockInfo JSON. Unlock sends the LockInfo
// sent at lock time with the unlock method (UNLOCK) to the unlock address;
// only 200 succeeds. Without a lock address locking is disabled; without
// an unlock address unlocking does nothing. Everywhere 401 means the
// endpoint requires auth and 403 that the credentials were refused.
//
// Requests carry basic auth only when a username is set. A request with a
// body carries Content-Type: application/json and Content-MD5 (base64 of
// the body's MD5). LockInfo JSON has the seven keys ID, Operation, Info,
// Who, Version, Created and Path, always present, Created in RFC 3339 with
// nanoseconds.
//
// Retries are go-retryablehttp's, configured as Terraform configures them:
// RetryMax retries after the first attempt, on transport errors, status 0,
// 429 and every 5xx but 501, never on other answers; the wait before retry
// n is RetryWaitMin*2^n capped at RetryWaitMax, or the Retry-After of a
// 429 or 503. When retries run out the error reads "<METHOD> <url> giving
// up after N attempt(s)". TLS is configured as Terraform does: a CA PEM
// replaces the system roots, a client certificate and key come together,
// SkipCertVerification turns verification off.
//
// # Reading a state without holding it
//
// The client reads a state only as a stream: StreamState hands the body to
// a consumer as it arrives and keeps none of it, and FetchSummary is
// StreamState through statefile.ReadSummary. There is no call that returns
// the whole body. The operator's consumers are statefile's walker
// (ReadSummary for the HttpBackend probe, ReadOutputs through outputs.Read
// for a RemoteState), so a state of millions of outputs costs a read buffer
// and the outputs a RemoteState keeps within its budgets, not memory in
// proportion to the state.
//
// # Writing a state without holding it
//
// UpdateFrom writes a state kept in a file (or any io.ReadSeeker) the way
// Update writes one from memory, under a lock given by ID or held by the
// client: the body is read as it is sent and rewound for every attempt,
// each attempt reading through its own reader so that a transport still
// sending an abandoned attempt cannot take bytes from the next one, and
// the body is checked against the size and MD5 the caller gave before its
// last bytes leave.
//
// # Where the client deliberately differs from Terraform
//
// The operator runs probes with cluster-wide rights against addresses a
// tenant chose, on servers that may be slow, wrong, huge or hostile. So:
//
//   - Retry-After is capped at RetryWaitMax (Terraform honours it
//     uncapped): a server cannot make a probe sleep for an hour.
//   - Config.AttemptTimeout bounds each attempt from the dial to the end
//     of the body (Terraform has no bound); 0 keeps Terraform's behaviour.
//   - Redirects are followed only to the same scheme, host and port, at
//     most 10 requests in all; any other is refused with
//     ErrRedirectRefused and not retried (Terraform follows any redirect).
//   - TLS certificate errors are not retried.
//   - WithDialContext opens connections through a given dial function,
//     such as a netguard.Dialer enforcing the operator's address policy;
//     what the dial function denies (netguard.ErrAddressDenied) is not
//     retried.
//   - WithWrapTransport sends every attempt through a wrapper, such as the
//     circuits of package circuit, which pause the requests to a server
//     that left one unanswered; what they pause (circuit.ErrOpen) is not
//     retried, so a server that never answers costs one attempt timeout.
//   - Responses are bounded by Config.MaxStateBytes.
//
// # Secrets and what a server sends
//
// No error text and no log line, at any verbosity, holds a password, a
// private key, a URL's userinfo or a query value (which may hold a token):
// every URL is printed as scheme://host/path, including inside the
// *url.Error of transport failures and in go-retryablehttp's own log
// lines, which pass through a redacting adapter. Errors say what was wrong
// with an answer without echoing it: not an invalid header, an unreadable
// lock holder, a malformed response line or a redirect's Location.
//
// A hostile server can echo the credentials it received into its answers.
// The client therefore removes its own secret strings (the password, the
// "user:password" pair, the base64 basic auth value and the addresses'
// query values, raw and escaped) from every LockInfo it returns and every
// error text, replacing them by "[redacted]". Secrets shorter than 8 bytes
// are replaced only where no letter or digit touches them.
//
// A Client is safe for concurrent use. It remembers the lock it acquired
// (for the ID query parameter of Update and the body of Unlock), so use one
// Client per logical lock holder.
package stateclient
