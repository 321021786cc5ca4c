// Package controllers holds the reconcilers of the backends.infrastate.io
// kinds. They are thin: they resolve references, call the pure packages under
// internal/ to render and probe, and write the results to the API server.
//
// One reconciler (backend_controller.go) serves every backend kind; what is
// specific to a kind is its backendKind implementation (httpbackend.go,
// cosbackend.go, and the files named after the kind), listed in
// backendKinds (registry.go). RemoteState and StateLock read and lock the
// state of any backend kind through the same implementations.
//
// The files form layers: the objects and the contract every kind
// implements at the bottom, the kinds above them, the reconcilers on top;
// only a reconciler and its phases use each other (architecture_test.go
// checks it). What knows no kind lives under controllers/internal
// (conditions, probes, related, owned), which never imports this package.
package controllers

// The permissions every reconciler of this package needs; each backend
// kind's file adds those of its own resource. The manager's ClusterRole in
// config/rbac/role.yaml is generated from these markers. Events are written
// through the events.k8s.io API only (mgr.GetEventRecorder): the core API's
// Events are leader election's, in the manager's own namespace, which
// config/rbac/leader_election_role.yaml grants.
//
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=remotestates,verbs=get;list;watch
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=remotestates/status,verbs=patch
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=remotestates/finalizers,verbs=update
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=statelocks,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=statelocks/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get
// +kubebuilder:rbac:groups="",resources=secrets;configmaps,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
