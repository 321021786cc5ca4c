// Package conditions is the condition vocabulary every reconciler of the
// operator shares: an observation (status, reason, message) and how it is
// set, how Ready, Reconciling and Stalled are summarized from how a
// reconciliation ended (kstatus' invariants hold), the stall error that
// says the user must act, and how a condition's change is told from the
// conditions before and after. It knows no kind of the API, and never
// imports the controllers.
package conditions
