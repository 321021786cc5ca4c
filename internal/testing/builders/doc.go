// Package builders builds the API's objects, and the Secrets and
// ConfigMaps they refer to, for the tests of every suite: the unit tables,
// the envtest suites and the end-to-end suite build their objects here, so
// that an object a test names means the same in each.
//
// Each kind has a wrapper: MakeX takes what every object of the kind needs
// (its name, its namespace and the one required field), chainable setters
// set the rest, and Obj returns the object itself. A wrapper is not an
// object: a call that forgets Obj does not compile. A field no setter sets
// is set on what Obj returns; a setter is added once tests need the field
// again and again.
//
//	backend := builders.MakeHttpBackend("app", ns, address).Locks().BasicAuth("runner", "state-password", "").Obj()
//
// Suites keep their own thin wrappers over these for what only they know,
// such as the address of their state server.
//
// Nothing here is used by the operator itself: it is for tests only.
package builders
