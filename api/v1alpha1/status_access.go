package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SharedStatus returns the status every backend kind shares.
func (in *HttpBackend) SharedStatus() *BackendStatus { return &in.Status.BackendStatus }

// StatusConditions returns the conditions, for condition helpers.
func (in *HttpBackend) StatusConditions() *[]metav1.Condition { return &in.Status.Conditions }

// StatusObservedGeneration returns the observed generation, for status helpers.
func (in *HttpBackend) StatusObservedGeneration() *int64 { return &in.Status.ObservedGeneration }

// SharedStatus returns the status every backend kind shares.
func (in *CosBackend) SharedStatus() *BackendStatus { return &in.Status.BackendStatus }

// StatusConditions returns the conditions, for condition helpers.
func (in *CosBackend) StatusConditions() *[]metav1.Condition { return &in.Status.Conditions }

// StatusObservedGeneration returns the observed generation, for status helpers.
func (in *CosBackend) StatusObservedGeneration() *int64 { return &in.Status.ObservedGeneration }

// StatusConditions returns the conditions, for condition helpers.
func (in *RemoteState) StatusConditions() *[]metav1.Condition { return &in.Status.Conditions }

// StatusObservedGeneration returns the observed generation, for status helpers.
func (in *RemoteState) StatusObservedGeneration() *int64 { return &in.Status.ObservedGeneration }
