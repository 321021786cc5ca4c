package controllers

import (
	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// httpFailures are the failure classes of the state client's errors (see
// classifyFailure): what an HttpBackend's probes and reads meet that any
// kind would not.
var httpFailures = []failureClass{
	{is: isTLSError, reason: backendsv1alpha1.TLSErrorReason,
		summary: "The TLS handshake with the server failed",
		next: "Check that spec.tls.caCertificate holds the CA that signed the server's certificate (it replaces the system " +
			"roots), that the certificate names the address's host, and, when the server asks for a client certificate, " +
			"spec.tls.clientCertificateSecretRef"},
	{is: errorIs(stateclient.ErrUnauthorized), reason: backendsv1alpha1.UnauthorizedReason,
		summary: "The state server asks for credentials",
		next:    "Set the backend's spec.username and spec.passwordSecretRef, or check them if they are set"},
	{is: errorIs(stateclient.ErrForbidden), reason: backendsv1alpha1.ForbiddenReason,
		summary: "The state server refused the credentials of the backend's spec.username and spec.passwordSecretRef",
		next:    "Check that this user may read the state, and that the Secret holds the password the server expects"},
	{is: errorIs(stateclient.ErrStateTooLarge), reason: backendsv1alpha1.StateUnreadableReason,
		summary: "The state is larger than the operator reads",
		next: "Check that the backend points at the state itself (an HttpBackend's spec.address, a CosBackend's spec.prefix " +
			"and spec.key); a state beyond this limit is neither probed nor read by a RemoteState"},
}
