package controllers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/netguard"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// How a failed probe or read is reported, whatever the kind: the reason of
// the condition it sets, and a message that ends with what to check. The
// functions of this file are pure and table-tested.

// probeFailure classifies a probe error into a condition reason. Its
// message says what happened, then the error, which names what failed
// (the error texts of internal/stateclient and internal/cos carry no
// credentials), then what to check (see failureClasses).
func probeFailure(err error) conditions.Observation {
	class := classifyFailure(err)
	return conditions.Observation{Status: metav1.ConditionFalse, Reason: class.reason,
		Message: class.summary + ": " + errorText(err) + ". " + class.nextStep(err)}
}

// errorText is err's text, without a final period, to go on with another
// sentence.
func errorText(err error) string {
	return strings.TrimSuffix(err.Error(), ".")
}

// failureClass is one kind of failed probe or read.
type failureClass struct {
	// is reports an error of the class.
	is func(error) bool
	// reason is the reason of the condition it sets.
	reason string
	// summary says what happened, as the message's first words.
	summary string
	// next says what to check, as the sentences that end the message.
	next string
	// nextFor, when set, says it for the error at hand instead.
	nextFor func(error) string
}

// nextStep is what the message of a failure of the class ends with.
func (c failureClass) nextStep(err error) string {
	if c.nextFor != nil {
		return c.nextFor(err)
	}
	return c.next
}

// failureClasses classify a failed probe or read, in order: the first
// whose is holds decides. Every next step names the fields or the place
// to check.
var failureClasses = []failureClass{
	{is: errorIs(netguard.ErrAddressDenied), reason: backendsv1alpha1.AddressDeniedReason,
		summary: "The manager's address policy refused the backend's address, and nothing was sent",
		next: "Point the backend at the state server (an HttpBackend's spec.address, a CosBackend's spec.endpoint); " +
			"if it is right, the platform team decides (--allowed-address-cidrs, --denied-address-cidrs)"},
	{is: errorIs(stateclient.ErrUnauthorized), reason: backendsv1alpha1.UnauthorizedReason,
		summary: "The state server asks for credentials",
		next:    "Set the backend's spec.username and spec.passwordSecretRef, or check them if they are set"},
	{is: errorIs(stateclient.ErrForbidden), reason: backendsv1alpha1.ForbiddenReason,
		summary: "The state server refused the credentials of the backend's spec.username and spec.passwordSecretRef",
		next:    "Check that this user may read the state, and that the Secret holds the password the server expects"},
	{is: errorIs(cos.ErrAccessDenied), reason: backendsv1alpha1.AccessDeniedReason,
		summary: "COS refused the keys of the backend's spec.credentialsSecretRef",
		next: "Check secretId and secretKey, and that the CAM policy of that key may list the bucket and read the state " +
			"objects under the prefix"},
	{is: errorIs(cos.ErrBucketNotFound), reason: backendsv1alpha1.BucketNotFoundReason,
		summary: "The bucket does not exist",
		next:    "Create it (its name is <name>-<appid>), or check spec.bucket and spec.region"},
	{is: isTLSError, reason: backendsv1alpha1.TLSErrorReason,
		summary: "The TLS handshake with the server failed",
		next: "Check that spec.tls.caCertificate holds the CA that signed the server's certificate (it replaces the system " +
			"roots), that the certificate names the address's host, and, when the server asks for a client certificate, " +
			"spec.tls.clientCertificateSecretRef"},
	{is: errorIs(statefile.ErrDecrypt), reason: backendsv1alpha1.DecryptionFailedReason,
		summary: "No passphrase of the backend's spec.encryption opens the state", nextFor: decryptionNextStep},
	// The first class of StateUnreadable, whose next step is that of any
	// state that does not parse (see nextStepAs).
	{is: isStateFormatError, reason: backendsv1alpha1.StateUnreadableReason,
		summary: "The answer is not a Terraform v4 state",
		next: "Check that the backend points at the state, not at a UI page or another document, and that Terraform or " +
			"OpenTofu wrote it"},
	{is: errorIs(stateclient.ErrStateTooLarge, cos.ErrStateTooLarge, statefile.ErrEncryptedTooLarge), reason: backendsv1alpha1.StateUnreadableReason,
		summary: "The state is larger than the operator reads",
		next: "Check that the backend points at the state itself (an HttpBackend's spec.address, a CosBackend's spec.prefix " +
			"and spec.key); a state beyond this limit is neither probed nor read by a RemoteState"},
	{is: errorIs(cos.ErrChecksumMissing, cos.ErrChecksumMismatch), reason: backendsv1alpha1.StateUnreadableReason,
		summary: "Terraform would refuse this state object",
		next:    "Push the state again with terraform state push; never upload it by hand, without its x-cos-meta-md5 checksum"},
	{is: errorIs(cos.ErrUnreachable), reason: backendsv1alpha1.UnreachableReason,
		summary: "COS did not answer",
		next:    "Check the manager's egress to COS (the bucket's domain, or spec.endpoint): DNS, NetworkPolicy, proxy"},
	{is: isNetworkError, reason: backendsv1alpha1.UnreachableReason,
		summary: "The state server did not answer",
		next: "Check from inside the cluster, on the manager's network, that the address resolves and its port answers: " +
			"Service name, port, NetworkPolicy, proxy"},
	{is: errorIs(cos.ErrInvalidLock), reason: backendsv1alpha1.ServerErrorReason,
		summary: "The .tflock object is not the lock Terraform writes",
		next:    "Check what wrote it, and delete it only once no run holds the lock"},
	{is: isCosAnswer, reason: backendsv1alpha1.ServerErrorReason,
		summary: "COS answered what the operator did not expect", next: cosAnswerNextStep},
}

// cosAnswerNextStep is the next step of an answer COS was not expected to
// give.
const cosAnswerNextStep = "Look the error code up in the COS documentation, or give the request ID to Tencent Cloud support"

// otherFailure is the class of every failure no class of failureClasses
// recognises: an answer the protocol does not allow.
var otherFailure = failureClass{reason: backendsv1alpha1.ServerErrorReason,
	summary: "The state server answered what the protocol does not allow", next: "Check its log for this request"}

// classifyFailure returns the class of err.
func classifyFailure(err error) failureClass {
	for _, c := range failureClasses {
		if c.is(err) {
			return c
		}
	}
	return otherFailure
}

// nextStepAs is the next step of err reported with reason: that of the
// first class of the reason that recognises err, else that of the first
// class of the reason.
func nextStepAs(reason string, err error) string {
	fallback := otherFailure
	found := false
	for _, c := range failureClasses {
		switch {
		case c.reason != reason:
		case c.is(err):
			return c.nextStep(err)
		case !found:
			fallback, found = c, true
		}
	}
	return fallback.nextStep(err)
}

// errorIs returns the test of an error that matches any of targets.
func errorIs(targets ...error) func(error) bool {
	return func(err error) bool {
		for _, t := range targets {
			if errors.Is(err, t) {
				return true
			}
		}
		return false
	}
}

// isCosAnswer reports an error answer from COS.
func isCosAnswer(err error) bool {
	_, ok := errors.AsType[*cos.ResponseError](err)
	return ok
}

// capitalize upper-cases the first letter of a message.
func capitalize(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError || !unicode.IsLower(r) {
		return s
	}
	return string(unicode.ToUpper(r)) + s[size:]
}

// isTLSError reports a failed TLS handshake or certificate check, on
// either side: a server that refuses the client's certificate, or asks
// for one the client does not have ("tls: certificate required"), sends a
// TLS alert, which crypto/tls reports as a "remote error".
func isTLSError(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		header   tls.RecordHeaderError
		alert    tls.AlertError
		op       *net.OpError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.As(err, &header) || errors.As(err, &alert) ||
		(errors.As(err, &op) && op.Op == "remote error")
}

// isNetworkError reports an error reaching the server: refused, reset,
// timed out, name not found, connection dropped.
func isNetworkError(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded)
}

// isStateFormatError reports an answer that does not parse as a v4 state:
// not JSON, another format version, an invalid output type.
func isStateFormatError(err error) bool {
	return errors.Is(err, statefile.ErrUnsupportedVersion) || errors.Is(err, statefile.ErrInvalidType) ||
		errors.Is(err, statefile.ErrMalformed)
}
