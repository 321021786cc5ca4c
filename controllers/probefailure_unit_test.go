package controllers

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/circuit"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/netguard"
	"github.com/infrastate/backend-operator/internal/outputs"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/stateencryption"
	"github.com/infrastate/backend-operator/internal/statefile"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// The next steps the failure messages end with, as a user reads them.
const (
	forbiddenSummary = "The state server refused the credentials of the backend's spec.username and spec.passwordSecretRef"
	forbiddenNext    = "Check that this user may read the state, and that the Secret holds the password the server expects"
	tlsSummary       = "The TLS handshake with the server failed"
	tlsNext          = "Check that spec.tls.caCertificate holds the CA that signed the server's certificate (it replaces the system " +
		"roots), that the certificate names the address's host, and, when the server asks for a client certificate, " +
		"spec.tls.clientCertificateSecretRef"
	networkSummary = "The state server did not answer"
	networkNext    = "Check from inside the cluster, on the manager's network, that the address resolves and its port answers: " +
		"Service name, port, NetworkPolicy, proxy"
	cosUnreachableNext = "Check the manager's egress to COS (the bucket's domain, or spec.endpoint): DNS, NetworkPolicy, proxy"
	formatSummary      = "The answer is not a Terraform v4 state"
	formatNext         = "Check that the backend points at the state, not at a UI page or another document, and that Terraform or " +
		"OpenTofu wrote it"
	tooLargeSummary = "The state is larger than the operator reads"
	tooLargeNext    = "Check that the backend points at the state itself (an HttpBackend's spec.address, a CosBackend's spec.prefix " +
		"and spec.key); a state beyond this limit is neither probed nor read by a RemoteState"
	checksumNext = "Push the state again with terraform state push; never upload it by hand, without its x-cos-meta-md5 checksum"
	serverNext   = "Check its log for this request"
	accessNext   = "Check secretId and secretKey, and that the CAM policy of that key may list the bucket and read the state " +
		"objects under the prefix"
	bucketNext        = "Create it (its name is <name>-<appid>), or check spec.bucket and spec.region"
	decryptSummary    = "No passphrase of the backend's spec.encryption opens the state"
	triedTwo          = "Secret team-a/pass-2027 key passphrase (spec.encryption.passphraseSecretRef) and Secret team-a/pass key old (spec.encryption.fallback.passphraseSecretRef)"
	wrongPassphrase   = "The passphrases tried were %s: the state may have been written with another passphrase (changing the passphrase in a Secret key is not a rotation), or altered. Put the passphrase it was written with in spec.encryption.fallback.passphraseSecretRef, under the Secret name and key it was written with"
	noMatchingKey     = "The passphrases tried were %s, and the state names none of them: a state names the passphrase it was written with by Secret name and key, so it was written with another one. Put that Secret reference in spec.encryption.fallback.passphraseSecretRef"
	specPassphrases   = "the passphrases of the backend's spec.encryption"
	addressDeniedNext = "Point the backend at the state server (an HttpBackend's spec.address, a CosBackend's spec.endpoint); " +
		"if it is right, the platform team decides (--allowed-address-cidrs, --denied-address-cidrs)"
)

// errPausedServer is the error of a request to a server whose circuit is
// open.
var errPausedServer = &circuit.OpenError{Namespace: "team-a", Address: "http://10.0.0.1:80",
	Since: time.Unix(30, 0), Until: time.Unix(60, 0), LastSent: time.Unix(0, 0), Waited: 30 * time.Second}

// What a paused server's message says.
const (
	pausedSummary = "The server left a request unanswered, and this namespace's requests to it are paused"
	pausedNext    = "Check from inside the cluster, on the manager's network, that the server answers, not only accepts " +
		"connections: Service endpoints, pods, load balancer. The pause doubles after each trial request without an answer " +
		"(at most 5 minutes); an answer ends it, and each object is probed again at its next interval"
)

// tried is a failure to decrypt with the passphrases of a rotation: the
// error a read returns through the stateDecrypter of such a backend.

// cosTLSNext is what to check after a failed TLS handshake with COS.
const cosTLSNext = "COS's certificate is signed by a public CA the manager trusts: check for a proxy that intercepts TLS on the " +
	"manager's egress, and that spec.endpoint, when set, is a COS endpoint its certificate names"

// everyKindsFailures are the failure classes of every kind's client but
// COS's fallback: the tables that use it classify errors of either client
// as their own kind would, and an error no class recognises as
// otherFailure.
var everyKindsFailures = slices.DeleteFunc(slices.Concat(httpFailures, cosFailures), func(c failureClass) bool { return c.is == nil })

func tried(err error) error {
	return &decryptError{err: err, tried: []string{
		"Secret team-a/pass-2027 key passphrase (spec.encryption.passphraseSecretRef)",
		"Secret team-a/pass key old (spec.encryption.fallback.passphraseSecretRef)",
	}}
}

// TestProbeFailure checks the reason of every kind of failed probe or
// read, and that its message says what happened, the error, and what to
// check, in that order.
func TestProbeFailure(t *testing.T) {
	wrongKey := fmt.Errorf("read: %w: %w", statefile.ErrDecrypt, stateencryption.ErrDecryptionFailed)
	cases := map[string]struct {
		err error
		// cos is true for an error of the COS client, classified with
		// cosFailures; the others are classified with httpFailures.
		cos                               bool
		wantReason, wantSummary, wantNext string
	}{
		"401": {err: &stateclient.StatusError{Method: "GET", URL: "u", StatusCode: 401}, wantReason: "Unauthorized",
			wantSummary: "The state server asks for credentials",
			wantNext:    "Set the backend's spec.username and spec.passwordSecretRef, or check them if they are set"},
		"403": {err: &stateclient.StatusError{Method: "GET", URL: "u", StatusCode: 403}, wantReason: "Forbidden",
			wantSummary: forbiddenSummary, wantNext: forbiddenNext},
		"500 after retries": {err: &stateclient.RetryError{Method: "GET", URL: "u", Attempts: 3, Err: &stateclient.StatusError{StatusCode: 500}},
			wantReason: "ServerError", wantSummary: "The state server answered what the protocol does not allow", wantNext: serverNext},
		"unexpected status": {err: &stateclient.StatusError{Method: "GET", URL: "u", StatusCode: 418},
			wantReason: "ServerError", wantSummary: "The state server answered what the protocol does not allow", wantNext: serverNext},
		"unknown CA": {err: fmt.Errorf("get: %w", x509.UnknownAuthorityError{}), wantReason: "TLSError",
			wantSummary: tlsSummary, wantNext: tlsNext},
		"wrong host name": {err: fmt.Errorf("get: %w", x509.HostnameError{Host: "x"}), wantReason: "TLSError",
			wantSummary: tlsSummary, wantNext: tlsNext},
		"client certificate required": {err: &stateclient.RetryError{Err: &url.Error{Op: "Get", URL: "u",
			Err: &net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}}}, wantReason: "TLSError",
			wantSummary: tlsSummary, wantNext: tlsNext},
		"refused": {err: &stateclient.RetryError{Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, wantReason: "Unreachable",
			wantSummary: networkSummary, wantNext: networkNext},
		"DNS": {err: fmt.Errorf("get: %w", &net.DNSError{Err: "no such host", Name: "x"}), wantReason: "Unreachable",
			wantSummary: networkSummary, wantNext: networkNext},
		"too large": {err: &stateclient.SizeError{Limit: 1}, wantReason: "StateUnreadable",
			wantSummary: tooLargeSummary, wantNext: tooLargeNext},
		"encrypted state too large": {err: fmt.Errorf("read: %w", statefile.ErrEncryptedTooLarge), wantReason: "StateUnreadable",
			wantSummary: tooLargeSummary, wantNext: tooLargeNext},
		"not a v4 state": {err: fmt.Errorf("read: %w", statefile.ErrUnsupportedVersion), wantReason: "StateUnreadable",
			wantSummary: formatSummary, wantNext: formatNext},
		"not JSON": {err: fmt.Errorf("read: %w", statefile.ErrMalformed), wantReason: "StateUnreadable",
			wantSummary: formatSummary, wantNext: formatNext},
		"a COS object without its checksum": {cos: true, err: fmt.Errorf("read: %w", cos.ErrChecksumMissing), wantReason: "StateUnreadable",
			wantSummary: "Terraform would refuse this state object", wantNext: checksumNext},
		"a COS object too large": {cos: true, err: fmt.Errorf("read: %w", cos.ErrStateTooLarge), wantReason: "StateUnreadable",
			wantSummary: tooLargeSummary, wantNext: tooLargeNext},
		"no passphrase opens it": {err: tried(wrongKey), wantReason: "DecryptionFailed",
			wantSummary: decryptSummary, wantNext: fmt.Sprintf(wrongPassphrase, triedTwo)},
		"no passphrase named": {err: tried(fmt.Errorf("read: %w: %w", statefile.ErrDecrypt, stateencryption.ErrNoMatchingKey)),
			wantReason: "DecryptionFailed", wantSummary: decryptSummary, wantNext: fmt.Sprintf(noMatchingKey, triedTwo)},
		"no passphrase opens it, the passphrases unknown": {err: wrongKey, wantReason: "DecryptionFailed",
			wantSummary: decryptSummary, wantNext: fmt.Sprintf(wrongPassphrase, specPassphrases)},
		"hostile key parameters": {err: tried(fmt.Errorf("read: %w: %w", statefile.ErrDecrypt, stateencryption.ErrInvalidParameters)),
			wantReason: "DecryptionFailed", wantSummary: decryptSummary,
			wantNext: "The passphrases tried were " + triedTwo + ", but the state's key parameters are malformed or beyond the operator's bounds " +
				"(200000 to 2000000 PBKDF2 iterations, a salt of at most 1024 bytes): check which runner wrote it; OpenTofu's own parameters are within them"},
		"address denied": {err: &stateclient.RetryError{Err: &netguard.DeniedError{Host: "metadata.test", Port: "80"}}, wantReason: "AddressDenied",
			wantSummary: "The manager's address policy refused the backend's address, and nothing was sent", wantNext: addressDeniedNext},
		"a server paused": {err: &stateclient.RetryError{Method: "GET", URL: "http://10.0.0.1/state", Attempts: 1,
			Err: &url.Error{Op: "Get", URL: "http://10.0.0.1/state", Err: errPausedServer}}, wantReason: "Unreachable",
			wantSummary: pausedSummary, wantNext: pausedNext},
		"a COS endpoint paused": {cos: true, err: fmt.Errorf("list: %w: %w", cos.ErrUnreachable, errPausedServer), wantReason: "Unreachable",
			wantSummary: pausedSummary, wantNext: pausedNext},
		"COS access denied": {cos: true, err: fmt.Errorf("read: %w", cos.ErrAccessDenied), wantReason: "AccessDenied",
			wantSummary: "COS refused the keys of the backend's spec.credentialsSecretRef", wantNext: accessNext},
		"COS no bucket": {cos: true, err: fmt.Errorf("read: %w", cos.ErrBucketNotFound), wantReason: "BucketNotFound",
			wantSummary: "The bucket does not exist", wantNext: bucketNext},
		"COS no answer": {cos: true, err: fmt.Errorf("read: %w", cos.ErrUnreachable), wantReason: "Unreachable",
			wantSummary: "COS did not answer", wantNext: cosUnreachableNext},
		"a COS error answer": {cos: true, err: &cos.ResponseError{Op: "read object", Bucket: "b", StatusCode: 500, Code: "InternalError", RequestID: "r-1"},
			wantReason: "ServerError", wantSummary: "COS answered what the operator did not expect",
			wantNext: "Look the error code up in the COS documentation, or give the request ID to Tencent Cloud support"},
		"a COS lock object that is no lock": {cos: true, err: fmt.Errorf("read lock: %w", cos.ErrInvalidLock), wantReason: "ServerError",
			wantSummary: "The .tflock object is not the lock Terraform writes",
			wantNext:    "Check what wrote it, and delete it only once no run holds the lock"},
		"anything else": {err: errors.New("boom"), wantReason: "ServerError",
			wantSummary: "The state server answered what the protocol does not allow", wantNext: serverNext},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kindFailures := httpFailures
			if tc.cos {
				kindFailures = cosFailures
			}
			got := probeFailure(kindFailures, tc.err)
			want := conditions.Observation{Status: metav1.ConditionFalse, Reason: tc.wantReason,
				Message: tc.wantSummary + ": " + tc.err.Error() + ". " + tc.wantNext}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(conditions.Observation{})); diff != "" {
				t.Errorf("probeFailure() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestForbiddenMessage shows a whole message as the user reads it.
func TestForbiddenMessage(t *testing.T) {
	err := &stateclient.StatusError{Method: "GET", URL: "https://state.example.com/team-a", StatusCode: 403}
	want := "The state server refused the credentials of the backend's spec.username and spec.passwordSecretRef: " +
		"GET https://state.example.com/team-a: HTTP remote state endpoint invalid auth (403 Forbidden). " +
		"Check that this user may read the state, and that the Secret holds the password the server expects"
	if diff := cmp.Diff(want, probeFailure(everyKindsFailures, err).Message); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func TestBucketObservation(t *testing.T) {
	cases := map[string]struct {
		err         error
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		"exists": {wantStatus: metav1.ConditionTrue, wantReason: "Reachable", wantMessage: "Bucket b-1 exists and can be read"},
		"not found": {err: fmt.Errorf("list: %w", cos.ErrBucketNotFound), wantStatus: metav1.ConditionFalse, wantReason: "BucketNotFound",
			wantMessage: "Bucket b-1 does not exist: list: COS bucket does not exist. " + bucketNext},
		"denied": {err: fmt.Errorf("list: %w", cos.ErrAccessDenied), wantStatus: metav1.ConditionFalse, wantReason: "AccessDenied",
			wantMessage: "COS refused access to bucket b-1: list: COS access denied. " + accessNext},
		"no answer": {err: fmt.Errorf("list: %w", cos.ErrUnreachable), wantStatus: metav1.ConditionFalse, wantReason: "Unreachable",
			wantMessage: "COS cannot be reached for bucket b-1: list: COS endpoint unreachable. " + cosUnreachableNext},
		// As the lock of the same bucket reads it: a TLS failure, not an
		// unreachable COS (see TestOneClassifierPerFailure).
		"no answer, over TLS": {err: fmt.Errorf("list: %w: %w", cos.ErrUnreachable, x509.UnknownAuthorityError{}), wantStatus: metav1.ConditionFalse,
			wantReason:  "TLSError",
			wantMessage: "COS cannot be reached over TLS for bucket b-1: list: COS endpoint unreachable: x509: certificate signed by unknown authority. " + cosTLSNext},
		"address denied": {err: fmt.Errorf("list: %w", &netguard.DeniedError{Host: "metadata.test", Port: "443"}), wantStatus: metav1.ConditionFalse,
			wantReason:  "AddressDenied",
			wantMessage: "COS for bucket b-1 cannot be reached: list: connection to host metadata.test port 443 refused by the address policy: . " + addressDeniedNext},
		"other": {err: errors.New("boom"), wantStatus: metav1.ConditionFalse, wantReason: "ServerError",
			wantMessage: "Checking bucket b-1 failed: boom. Look the error code up in the COS documentation, or give the request ID to Tencent Cloud support"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := bucketObservation("b-1", tc.err)
			want := conditions.Observation{Status: tc.wantStatus, Reason: tc.wantReason, Message: tc.wantMessage}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(conditions.Observation{})); diff != "" {
				t.Errorf("bucketObservation() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestContentFailure checks the reason of a state that was read but
// cannot be published, and that its message ends with what to do.
func TestContentFailure(t *testing.T) {
	cases := map[string]struct {
		err                     error
		wantReason, wantMessage string
	}{
		"a missing output": {err: &outputs.MissingError{Name: "vpc_id"}, wantReason: "OutputMissing",
			wantMessage: `Output "vpc_id" is not in the state and spec.defaults has no value for it: add it to the outputs of the stack ` +
				`that writes the state and apply it, set spec.defaults, or leave it out of spec.outputs`},
		"a mistyped output": {err: &outputs.TypeMismatchError{Name: "port", Want: "number", Got: "string"}, wantReason: "OutputTypeMismatch",
			wantMessage: `Output "port" is a string, not the number spec.outputs asks for: set its type in spec.outputs to the ` +
				`output's type (or to any), or change the output in the stack that writes the state`},
		"an invalid key": {err: &outputs.KeyError{Name: "x", Key: ".."}, wantReason: "OutputKeyInvalid",
			wantMessage: `Output "x" cannot be published: ".." is not a valid ConfigMap or Secret key (letters, digits, '-', '_' and '.', ` +
				`at most 253 characters, not '.' or '..'); rename it with spec.outputs[].key or leave it out`},
		"an invalid default": {err: fmt.Errorf("%w %q: not JSON", outputs.ErrInvalidDefault, "x"), wantReason: "InvalidSpec",
			wantMessage: `Invalid default "x": not JSON: fix spec.defaults`},
		"an encrypted state and no encryption": {err: fmt.Errorf("x: %w", statefile.ErrEncrypted), wantReason: "StateEncrypted",
			wantMessage: "The state is encrypted with OpenTofu's state encryption: set spec.encryption on the backend to the passphrase its runners encrypt with"},
		"no passphrase opens it": {err: tried(fmt.Errorf("x: %w: %w", statefile.ErrDecrypt, stateencryption.ErrDecryptionFailed)),
			wantReason: "DecryptionFailed",
			wantMessage: "The state is encrypted and spec.encryption of the backend cannot decrypt it: " +
				"x: cannot decrypt the state: decrypting the state failed. " + fmt.Sprintf(wrongPassphrase, triedTwo)},
		"not a v4 state": {err: fmt.Errorf("x: %w", statefile.ErrUnsupportedVersion), wantReason: "StateUnreadable",
			wantMessage: "The state cannot be parsed: x: unsupported state format version. " + formatNext},
		"too large to decrypt": {err: fmt.Errorf("x: %w", statefile.ErrEncryptedTooLarge), wantReason: "StateUnreadable",
			wantMessage: "The state cannot be parsed: x: the encrypted state is too large to decrypt. " + tooLargeNext},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := contentFailure(tc.err)
			want := conditions.Observation{Status: metav1.ConditionFalse, Reason: tc.wantReason, Message: tc.wantMessage}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(conditions.Observation{})); diff != "" {
				t.Errorf("contentFailure() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStateObjectFailure checks the BucketReady condition of a bucket
// whose state object cannot be used.
func TestStateObjectFailure(t *testing.T) {
	cases := map[string]struct {
		err                     error
		wantReason, wantMessage string
	}{
		"no checksum": {err: fmt.Errorf("reading the state: %w", cos.ErrChecksumMissing), wantReason: "StateUnreadable",
			wantMessage: "The bucket exists, but its state object cannot be used: reading the state: object has no valid x-cos-meta-md5 checksum. " + checksumNext},
		"refused": {err: fmt.Errorf("reading the state: %w", cos.ErrAccessDenied), wantReason: "StateUnreadable",
			wantMessage: "The bucket exists, but its state object cannot be used: reading the state: COS access denied. " + accessNext},
		"no passphrase opens it": {err: tried(fmt.Errorf("reading the state: %w: %w", statefile.ErrDecrypt, stateencryption.ErrNoMatchingKey)),
			wantReason: "DecryptionFailed",
			wantMessage: "The bucket exists, but its state object cannot be used: reading the state: cannot decrypt the state: " +
				"no configured key provider has parameters in the encrypted state. " + fmt.Sprintf(noMatchingKey, triedTwo)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := stateObjectFailure(tc.err)
			want := conditions.Observation{Status: metav1.ConditionFalse, Reason: tc.wantReason, Message: tc.wantMessage}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(conditions.Observation{})); diff != "" {
				t.Errorf("stateObjectFailure() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOneClassifierPerFailure checks that a failure reads the same in
// every condition that reports it: a CosBackend whose COS answers over a
// TLS connection the manager does not trust reported BucketReady
// Unreachable but Locked TLSError, from two classifiers that disagreed.
func TestOneClassifierPerFailure(t *testing.T) {
	cases := map[string]struct {
		err  error
		want string
	}{
		"TLS behind an unreachable COS": {err: fmt.Errorf("list: %w: %w", cos.ErrUnreachable, x509.UnknownAuthorityError{}), want: "TLSError"},
		"COS unreachable":               {err: fmt.Errorf("list: %w", cos.ErrUnreachable), want: "Unreachable"},
		"COS paused":                    {err: fmt.Errorf("list: %w: %w", cos.ErrUnreachable, errPausedServer), want: "Unreachable"},
		"access denied":                 {err: fmt.Errorf("list: %w", cos.ErrAccessDenied), want: "AccessDenied"},
		"address denied":                {err: fmt.Errorf("list: %w", &netguard.DeniedError{Host: "metadata.test", Port: "443"}), want: "AddressDenied"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			backend := builders.MakeCosBackend("b", "n", "b-1").Generation(1).Obj()
			applyCosProbe(newOperatorMetrics(clock.RealClock{}), backend, cosProbeResult{bucketErr: tc.err}, time.Unix(0, 0))
			got := map[string]string{}
			for _, c := range backend.Status.Conditions {
				got[c.Type] = c.Reason
			}
			sl := makeSlock().Obj()
			applySlockResult(sl, slockResult{action: slockHold, err: tc.err}, "CosBackend b", cosFailures)
			got["StateLock Locked"] = sl.Status.Conditions[0].Reason
			want := map[string]string{"BucketReady": tc.want, "Locked": tc.want, "StateLock Locked": tc.want}
			if diff := cmp.Diff(want, map[string]string{"BucketReady": got["BucketReady"], "Locked": got["Locked"],
				"StateLock Locked": got["StateLock Locked"]}); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}
