package controllers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"syscall"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/netguard"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// The functions of this file are pure: they turn what a probe saw into
// status, and are table-tested.

// stateClientConfig is the state client configuration of a spec, with the
// same settings Terraform would use.
func stateClientConfig(spec backendsv1alpha1.HttpBackendSpec, secrets httpSecrets) stateclient.Config {
	cfg := stateclient.DefaultConfig(spec.Address)
	cfg.UpdateMethod = spec.UpdateMethod
	cfg.LockAddress, cfg.LockMethod = spec.LockAddress, spec.LockMethod
	cfg.UnlockAddress, cfg.UnlockMethod = spec.UnlockAddress, spec.UnlockMethod
	cfg.Username, cfg.Password = spec.Username, string(secrets.Password)
	if spec.RetryMax != nil {
		cfg.RetryMax = int(*spec.RetryMax)
	}
	if spec.RetryWaitMin != nil {
		cfg.RetryWaitMin = time.Duration(*spec.RetryWaitMin) * time.Second
	}
	if spec.RetryWaitMax != nil {
		cfg.RetryWaitMax = time.Duration(*spec.RetryWaitMax) * time.Second
	}
	cfg.SkipCertVerification = spec.SkipCertVerification
	cfg.ClientCertificatePEM = secrets.ClientCertificatePEM
	cfg.ClientPrivateKeyPEM = secrets.ClientPrivateKeyPEM
	cfg.ClientCACertificatePEM = secrets.ClientCACertificatePEM
	cfg.AttemptTimeout = probeAttemptTimeout
	return cfg
}

// stateObservation is the StateReachable condition for a fetch result.
func stateObservation(summary *stateclient.StateSummary, err error) observation {
	if err != nil {
		return probeFailure(err)
	}
	if summary == nil || !summary.Present {
		return observation{status: metav1.ConditionTrue, reason: backendsv1alpha1.ReachableReason,
			message: "The backend answers; it holds no state yet"}
	}
	return observation{status: metav1.ConditionTrue, reason: backendsv1alpha1.ReachableReason,
		message: fmt.Sprintf("The backend answers; state serial %d, lineage %s", summary.Serial, summary.Lineage)}
}

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
	case errors.Is(err, stateclient.ErrStateTooLarge), isStateFormatError(err):
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

// stateSummary is status.state for a fetch result.
func stateSummary(s *stateclient.StateSummary) *backendsv1alpha1.StateSummary {
	if s == nil || !s.Present {
		return &backendsv1alpha1.StateSummary{Present: false}
	}
	return stateStatus(s.Summary, s.SizeBytes)
}

// stateStatus is status.state for a present state of size bytes; every
// kind reports a state this way. What the state holds is clipped to the
// API's bounds, so that a state written by anything but Terraform cannot
// make the status patch fail.
func stateStatus(summary statefile.Summary, size int64) *backendsv1alpha1.StateSummary {
	return &backendsv1alpha1.StateSummary{
		Present:          true,
		Serial:           int64(min(summary.Serial, math.MaxInt64)),
		Lineage:          clip(summary.Lineage, 128),
		TerraformVersion: clip(summary.TerraformVersion, 64),
		SizeBytes:        size,
		OutputCount:      int32(min(summary.OutputCount, math.MaxInt32)),
	}
}

// lockInfo is status.lock for a lock holder; nil when the holder is
// unknown.
func lockInfo(l *stateclient.LockInfo) *backendsv1alpha1.LockInfo {
	if l == nil {
		return nil
	}
	// The holder wrote these fields; clip them to the bounds of the API so
	// that an oversized lock cannot make the status patch fail.
	out := &backendsv1alpha1.LockInfo{
		ID: clip(l.ID, 256), Operation: clip(l.Operation, 256), Info: clip(l.Info, 4096),
		Who: clip(l.Who, 512), Version: clip(l.Version, 64), Path: clip(l.Path, 1024),
	}
	if !l.Created.IsZero() {
		created := metav1.NewTime(l.Created)
		out.Created = &created
	}
	return out
}

// clip shortens s to at most n bytes without splitting a UTF-8 sequence.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// describeHolder is the Locked message for a holder.
func describeHolder(h *backendsv1alpha1.LockInfo) string {
	if h == nil {
		return "The state is locked by a holder whose lock information cannot be read."
	}
	msg := fmt.Sprintf("The state is locked: ID %s", h.ID)
	if h.Who != "" {
		msg += ", held by " + h.Who
	}
	if h.Operation != "" {
		msg += ", operation " + h.Operation
	}
	if h.Created != nil {
		msg += ", since " + h.Created.UTC().Format(time.RFC3339)
	}
	return msg + "."
}
