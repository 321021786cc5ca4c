package controllers

// backendKinds are the backend kinds the operator manages. Each is
// implemented in a file of its own (httpbackend.go, cosbackend.go); the
// backend reconciler, the field indexes, RemoteState's reads and its
// watches work on every kind of this list, so a new kind is its
// implementation and one line here.
var backendKinds = []backendKind{httpKind{}, cosKind{}}

// lookupBackendKind returns the backend kind named name.
func lookupBackendKind(name string) (backendKind, bool) {
	for _, k := range backendKinds {
		if k.name() == name {
			return k, true
		}
	}
	return nil, false
}

// backendKindNames are the names of the backend kinds.
func backendKindNames() []string {
	names := make([]string, 0, len(backendKinds))
	for _, k := range backendKinds {
		names = append(names, k.name())
	}
	return names
}
