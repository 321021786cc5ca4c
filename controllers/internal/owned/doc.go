// Package owned writes the objects the operator renders or publishes
// (ConfigMaps and Secrets a backend renders, those a RemoteState
// publishes): only when their content changed, never over an object that
// another owner controls or another writer changed (a content hash
// annotation tells), and it remembers what it wrote so that a resync
// reads and writes nothing. It knows no kind of the API, and never
// imports the controllers.
package owned
