// Package controllers holds the reconcilers of the backends.infrastate.io
// kinds. They are thin: they resolve references, call the pure packages under
// internal/ to render and probe, and write the results to the API server.
package controllers

// The permissions every reconciler of this package needs. The manager's
// ClusterRole in config/rbac/role.yaml is generated from these markers.
//
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=httpbackends;cosbackends;remotestates,verbs=get;list;watch
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=httpbackends/status;cosbackends/status;remotestates/status,verbs=patch
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=httpbackends/finalizers;cosbackends/finalizers;remotestates/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
