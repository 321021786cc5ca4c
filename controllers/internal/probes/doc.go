// Package probes runs the probes of the operator off the reconcile path
// (Pool: bounded at once and per namespace, fair between namespaces, each
// result kept until the reconcile that writes it acknowledges it) and
// remembers when each object was probed and with which inputs (Schedule).
// A probe is any function of a context; the package knows no kind of the
// API, and never imports the controllers.
package probes
