package controllers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"syscall"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/netguard"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// How a failed probe or read is reported, whatever the kind: the reason of
// the condition it sets. The functions of this file are pure and
// table-tested.

// probeFailure classifies a probe error into a condition reason. The error
// texts of internal/stateclient carry no credentials.
func probeFailure(err error) observation {
	obs := observation{status: metav1.ConditionFalse, message: err.Error()}
	switch {
	case errors.Is(err, netguard.ErrAddressDenied):
		obs.reason = backendsv1alpha1.AddressDeniedReason
	case errors.Is(err, stateclient.ErrUnauthorized):
		obs.reason = backendsv1alpha1.UnauthorizedReason
	case errors.Is(err, stateclient.ErrForbidden):
		obs.reason = backendsv1alpha1.ForbiddenReason
	case errors.Is(err, cos.ErrAccessDenied):
		obs.reason = backendsv1alpha1.AccessDeniedReason
	case errors.Is(err, cos.ErrBucketNotFound):
		obs.reason = backendsv1alpha1.BucketNotFoundReason
	case isTLSError(err):
		obs.reason = backendsv1alpha1.TLSErrorReason
	case errors.Is(err, statefile.ErrDecrypt):
		obs.reason = backendsv1alpha1.DecryptionFailedReason
	case errors.Is(err, stateclient.ErrStateTooLarge), errors.Is(err, statefile.ErrEncryptedTooLarge), isStateFormatError(err):
		obs.reason = backendsv1alpha1.StateUnreadableReason
	case errors.Is(err, cos.ErrUnreachable), isNetworkError(err):
		obs.reason = backendsv1alpha1.UnreachableReason
	default:
		obs.reason = backendsv1alpha1.ServerErrorReason
	}
	return obs
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
