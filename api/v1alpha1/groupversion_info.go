// Package v1alpha1 contains the API types of the backends.infrastate.io group:
// HttpBackend, CosBackend and the types they share.
//
// +kubebuilder:object:generate=true
// +groupName=backends.infrastate.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "backends.infrastate.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme. It is
	// apimachinery's builder, so importing the API pulls in apimachinery
	// only, not controller-runtime.
	SchemeBuilder runtime.SchemeBuilder

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// register adds objs, the kinds of one *_types.go file and their lists, to
// SchemeBuilder under GroupVersion, with the meta/v1 option types every
// group version needs (what controller-runtime's scheme.Builder did).
func register(objs ...runtime.Object) {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, objs...)
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})
}
