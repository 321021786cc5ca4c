package controllers

import (
	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos"
)

// cosFailures are the failure classes of the COS client's errors (see
// classifyFailure): what a CosBackend's probes and reads meet that any
// kind would not.
var cosFailures = []failureClass{
	{is: isTLSError, reason: backendsv1alpha1.TLSErrorReason,
		summary: "The TLS handshake with COS failed",
		next: "COS's certificate is signed by a public CA the manager trusts: check for a proxy that intercepts TLS on the " +
			"manager's egress, and that spec.endpoint, when set, is a COS endpoint its certificate names"},
	{is: errorIs(cos.ErrAccessDenied), reason: backendsv1alpha1.AccessDeniedReason,
		summary: "COS refused the keys of the backend's spec.credentialsSecretRef",
		next: "Check secretId and secretKey, and that the CAM policy of that key may list the bucket and read the state " +
			"objects under the prefix"},
	{is: errorIs(cos.ErrBucketNotFound), reason: backendsv1alpha1.BucketNotFoundReason,
		summary: "The bucket does not exist",
		next:    "Create it (its name is <name>-<appid>), or check spec.bucket and spec.region"},
	{is: errorIs(cos.ErrStateTooLarge), reason: backendsv1alpha1.StateUnreadableReason,
		summary: "The state is larger than the operator reads",
		next: "Check that the backend points at the state itself (an HttpBackend's spec.address, a CosBackend's spec.prefix " +
			"and spec.key); a state beyond this limit is neither probed nor read by a RemoteState"},
	{is: errorIs(cos.ErrChecksumMissing, cos.ErrChecksumMismatch), reason: backendsv1alpha1.StateUnreadableReason,
		summary: "Terraform would refuse this state object",
		next:    "Push the state again with terraform state push; never upload it by hand, without its x-cos-meta-md5 checksum"},
	{is: errorIs(cos.ErrUnreachable), reason: backendsv1alpha1.UnreachableReason,
		summary: "COS did not answer",
		next:    "Check the manager's egress to COS (the bucket's domain, or spec.endpoint): DNS, NetworkPolicy, proxy"},
	{is: errorIs(cos.ErrInvalidLock), reason: backendsv1alpha1.ServerErrorReason,
		summary: "The .tflock object is not the lock Terraform writes",
		next:    "Check what wrote it, and delete it only once no run holds the lock"},
	// The fallback: an answer COS was not expected to give.
	{reason: backendsv1alpha1.ServerErrorReason, summary: "COS answered what the operator did not expect", next: cosAnswerNextStep},
}

// cosAnswerNextStep is the next step of an answer COS was not expected to
// give.
const cosAnswerNextStep = "Look the error code up in the COS documentation, or give the request ID to Tencent Cloud support"
