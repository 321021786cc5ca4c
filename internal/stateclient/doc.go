// Package stateclient is a client for Terraform's REST state protocol: the
// protocol Terraform's and OpenTofu's "http" backend speaks. The operator
// uses it to probe a backend, read and summarize its state, and see or
// release the state lock.
//
// The client speaks the protocol exactly as Terraform does (see the
// project's PROTOCOL.md): the same methods, status codes, headers, lock
// bodies, retry policy (go-retryablehttp with its default policy and
// backoff) and TLS configuration. Differences are limited to the Go API:
// errors are typed (StatusError, LockError, SizeError and sentinels),
// responses are bounded by Config.MaxStateBytes, every call takes a context,
// and no error or log line carries a password, a private key or a URL's
// userinfo.
//
// A Client is safe for concurrent use. It remembers the lock it acquired
// (for the ID query parameter of Update and the body of Unlock), so use one
// Client per logical lock holder.
package stateclient
