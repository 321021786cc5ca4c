package controllers

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/netguard"
	"github.com/infrastate/backend-operator/internal/render"
)

// The functions of this file are pure and table-tested.

// cosConfig is the COS client configuration of a spec.
func cosConfig(spec backendsv1alpha1.CosBackendSpec, region string, secrets render.CosSecrets) cos.Config {
	return cos.Config{
		Bucket:     spec.Bucket,
		Region:     region,
		Prefix:     spec.Prefix,
		Key:        spec.Key,
		Accelerate: spec.Accelerate != nil && *spec.Accelerate,
		Endpoint:   spec.Endpoint,
		// Admission refuses an http:// endpoint unless the spec allows it.
		AllowHTTPEndpoint: spec.AllowInsecureEndpoint,
		SecretID:          string(secrets.SecretID),
		SecretKey:         string(secrets.SecretKey),
		SecurityToken:     string(secrets.SecurityToken),
	}
}

// bucketObservation is the BucketReady condition for a bucket check. An
// unreachable COS says nothing about the bucket, so it is Unknown.
func bucketObservation(bucket string, err error) observation {
	switch {
	case err == nil:
		return observation{status: metav1.ConditionTrue, reason: backendsv1alpha1.ReachableReason,
			message: fmt.Sprintf("Bucket %s exists and can be read", bucket)}
	case errors.Is(err, netguard.ErrAddressDenied):
		return observation{status: metav1.ConditionFalse, reason: backendsv1alpha1.AddressDeniedReason,
			message: fmt.Sprintf("COS for bucket %s cannot be reached: %v", bucket, err)}
	case errors.Is(err, cos.ErrBucketNotFound):
		return observation{status: metav1.ConditionFalse, reason: backendsv1alpha1.BucketNotFoundReason,
			message: fmt.Sprintf("Bucket %s does not exist: create it first (%v)", bucket, err)}
	case errors.Is(err, cos.ErrAccessDenied):
		return observation{status: metav1.ConditionFalse, reason: backendsv1alpha1.AccessDeniedReason,
			message: fmt.Sprintf("COS refused access to bucket %s: check the credentials (%v)", bucket, err)}
	case errors.Is(err, cos.ErrUnreachable):
		return observation{status: metav1.ConditionFalse, reason: backendsv1alpha1.UnreachableReason,
			message: fmt.Sprintf("COS cannot be reached for bucket %s: %v", bucket, err)}
	default:
		return observation{status: metav1.ConditionFalse, reason: backendsv1alpha1.ServerErrorReason,
			message: fmt.Sprintf("Checking bucket %s failed: %v", bucket, err)}
	}
}
