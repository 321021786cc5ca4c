// Package grants decides, in pure functions, what the OutputGrants of a
// producer namespace let a RemoteState of another namespace read: whether
// any grant covers its backend, workspace and namespace, and which of the
// state's outputs it may publish. Nothing crosses a namespace boundary
// that a grant does not name: a sensitive output only where a grant names
// it in sensitiveOutputs.
package grants
