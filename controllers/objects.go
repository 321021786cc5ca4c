package controllers

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// statusObject is a kind of this API whose status has conditions and an
// observed generation.
type statusObject interface {
	client.Object
	StatusConditions() *[]metav1.Condition
	StatusObservedGeneration() *int64
	// StatusValue is the status, as a status patch marshals it.
	StatusValue() any
}

// backendObject is an object of a backend kind.
type backendObject interface {
	statusObject
	// SharedStatus is the status every backend kind shares.
	SharedStatus() *backendsv1alpha1.BackendStatus
}
