// Package owned writes the objects the operator renders or publishes
// (ConfigMaps and Secrets a backend renders, those a RemoteState
// publishes): only when their content changed, never over an object that
// another owner controls or another writer changed (a content hash
// annotation tells), and it remembers what it wrote so that a resync
// reads and writes nothing. Its Ledger counts the bytes of what it wrote
// per namespace against the API storage budget, and refuses a write that
// would exceed the namespace's share. It knows no kind of the API, and
// never imports the controllers.
package owned
