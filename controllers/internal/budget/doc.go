// Package budget is the one mechanism that bounds what a tenant can make
// the manager spend: memory held for reads, bytes written to the API
// server, CPU seconds of key derivation. Each resource is a Shares: a
// total, and the share of it each namespace may use. A request that would
// exceed its namespace's share, or the total, does not fit (Fits,
// TryTake): its *ExceededError names the budget and the flag that sets
// it, and the caller refuses the request or, as the prober does, keeps it
// queued; nothing one namespace does can use another's share.
//
// A Shares whose Window is set is a rate: what a namespace used drains
// away linearly over the window, so the share is an amount per window
// (CPU seconds per minute, say), charged after the fact and checked
// before the next use.
//
// It knows no kind of the API, and never imports the controllers.
package budget
