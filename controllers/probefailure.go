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
	"github.com/infrastate/backend-operator/internal/circuit"
	"github.com/infrastate/backend-operator/internal/netguard"
	"github.com/infrastate/backend-operator/internal/stateencryption"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// How a failed probe or read is reported, whatever the kind: the reason of
// the condition it sets, and a message that ends with what to check. The
// functions of this file are pure and table-tested.

// probeFailure classifies the error of a probe or read of a backend whose
// kind's own failure classes are kindFailures into a condition reason (see
// classifyFailure). Its message says what happened, then the error, which
// names what failed (the error texts of internal/stateclient and
// internal/cos carry no credentials), then what to check.
func probeFailure(kindFailures []failureClass, err error) conditions.Observation {
	class := classifyFailure(kindFailures, err)
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
	// is reports an error of the class; nil in a kind's fallback, the
	// class of the errors no other class recognises.
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

// leadingFailures classify, before any kind's own classes, what a probe
// or read of any kind may meet: the address policy, a server paused for
// not answering, the key derivation CPU budget, the state's encryption and
// format (see classifyFailure).
var leadingFailures = []failureClass{
	{is: errorIs(netguard.ErrAddressDenied), reason: backendsv1alpha1.AddressDeniedReason,
		summary: "The manager's address policy refused the backend's address, and nothing was sent",
		next: "Point the backend at the state server (an HttpBackend's spec.address, a CosBackend's spec.endpoint); " +
			"if it is right, the platform team decides (--allowed-address-cidrs, --denied-address-cidrs)"},
	// Reported as the timeout that opened the circuit would be, with the
	// pause in the message.
	{is: errorIs(circuit.ErrOpen), reason: backendsv1alpha1.UnreachableReason,
		summary: "The server left a request unanswered, and this namespace's requests to it are paused", next: circuitNextStep},
	// Before DecryptionFailed: a key derivation the key derivation CPU
	// budget refused found no passphrase wrong.
	{is: errorIs(stateencryption.ErrDerivationRefused), reason: backendsv1alpha1.BudgetExceededReason,
		summary: "Deriving the key of the encrypted state was refused", nextFor: derivationNextStep},
	{is: errorIs(statefile.ErrDecrypt), reason: backendsv1alpha1.DecryptionFailedReason,
		summary: "No passphrase of the backend's spec.encryption opens the state", nextFor: decryptionNextStep},
	// The first class of StateUnreadable, whose next step is that of any
	// state that does not parse (see nextStepAs).
	{is: isStateFormatError, reason: backendsv1alpha1.StateUnreadableReason,
		summary: "The answer is not a Terraform v4 state",
		next: "Check that the backend points at the state, not at a UI page or another document, and that Terraform or " +
			"OpenTofu wrote it"},
	{is: errorIs(statefile.ErrEncryptedTooLarge), reason: backendsv1alpha1.StateUnreadableReason,
		summary: "The state is larger than the operator reads",
		next: "Check that the backend points at the state itself (an HttpBackend's spec.address, a CosBackend's spec.prefix " +
			"and spec.key); a state beyond this limit is neither probed nor read by a RemoteState"},
}

// circuitNextStep is what to check when a server's requests are paused.
const circuitNextStep = "Check from inside the cluster, on the manager's network, that the server answers, not only accepts " +
	"connections: Service endpoints, pods, load balancer. The pause doubles after each trial request without an answer " +
	"(at most 5 minutes); an answer ends it, and each object is probed again at its next interval"

// trailingFailures classify, after a kind's own classes, a server that
// did not answer (see classifyFailure).
var trailingFailures = []failureClass{
	{is: isNetworkError, reason: backendsv1alpha1.UnreachableReason,
		summary: "The state server did not answer",
		next: "Check from inside the cluster, on the manager's network, that the address resolves and its port answers: " +
			"Service name, port, NetworkPolicy, proxy"},
}

// otherFailure is the class of every failure no class of failureClasses
// recognises: an answer the protocol does not allow.
var otherFailure = failureClass{reason: backendsv1alpha1.ServerErrorReason,
	summary: "The state server answered what the protocol does not allow", next: "Check its log for this request"}

// classifyFailure returns the class of err, met by a probe or read of a
// backend whose kind's own classes are kindFailures (the classes of its
// client's errors, TLS failures among them, each in the kind's words:
// backendKind.failures): the first that recognises it among
// leadingFailures, kindFailures and trailingFailures, in this order, else
// the kind's fallback (its class without an is), else otherFailure. One
// classifier for every condition that reports a failure, so that a
// failure reads the same in each of them.
func classifyFailure(kindFailures []failureClass, err error) failureClass {
	fallback := otherFailure
	for _, classes := range [][]failureClass{leadingFailures, kindFailures, trailingFailures} {
		for _, c := range classes {
			switch {
			case c.is == nil:
				fallback = c
			case c.is(err):
				return c
			}
		}
	}
	return fallback
}

// nextStepAs is the next step of err reported with reason: that of the
// first class of the reason that recognises err (among the classes
// classifyFailure reads, with kindFailures), else that of the first class
// of the reason.
func nextStepAs(kindFailures []failureClass, reason string, err error) string {
	fallback := otherFailure
	found := false
	for _, classes := range [][]failureClass{leadingFailures, kindFailures, trailingFailures} {
		for _, c := range classes {
			switch {
			case c.reason != reason || c.is == nil:
			case c.is(err):
				return c.nextStep(err)
			case !found:
				fallback, found = c, true
			}
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
