package controllers

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/netguard"
	"github.com/infrastate/backend-operator/internal/outputs"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/stateencryption"
	"github.com/infrastate/backend-operator/internal/statefile"
	"github.com/infrastate/backend-operator/internal/testenv"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// failures are errors of every class a probe or a read meets.
var failures = []error{
	&stateclient.StatusError{Method: "GET", URL: "u", StatusCode: 401},
	&stateclient.StatusError{Method: "GET", URL: "u", StatusCode: 403},
	&stateclient.RetryError{Method: "GET", URL: "u", Attempts: 3, Err: &stateclient.StatusError{StatusCode: 500}},
	&stateclient.RetryError{Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}},
	&stateclient.RetryError{Err: &netguard.DeniedError{Host: "metadata.test", Port: "80"}},
	&net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")},
	&stateclient.SizeError{Limit: 1},
	fmt.Errorf("read: %w", statefile.ErrMalformed),
	fmt.Errorf("read: %w", statefile.ErrEncryptedTooLarge),
	tried(fmt.Errorf("read: %w: %w", statefile.ErrDecrypt, stateencryption.ErrDecryptionFailed)),
	tried(fmt.Errorf("read: %w: %w", statefile.ErrDecrypt, stateencryption.ErrNoMatchingKey)),
	fmt.Errorf("read: %w: %w", statefile.ErrDecrypt, stateencryption.ErrInvalidParameters),
	&derivationRefusedError{exceeded: errShareUsed},
	&derivationRefusedError{exceeded: errTotalUsed},
	fmt.Errorf("reading the state: %w", cos.ErrChecksumMismatch),
	fmt.Errorf("list: %w", cos.ErrAccessDenied),
	fmt.Errorf("list: %w", cos.ErrBucketNotFound),
	fmt.Errorf("list: %w", cos.ErrUnreachable),
	fmt.Errorf("read lock: %w", cos.ErrInvalidLock),
	&cos.ResponseError{Op: "read object", Bucket: "b", StatusCode: 500, Code: "InternalError"},
	errors.New("boom"),
}

// contentFailures are errors of every kind of state that was read but
// cannot be published.
var contentFailures = []error{
	&outputs.MissingError{Name: "vpc_id"},
	&outputs.TypeMismatchError{Name: "port", Want: "number", Got: "string"},
	&outputs.KeyError{Name: "x", Key: ".."},
	fmt.Errorf("%w: the values total 9 bytes", outputs.ErrTooLarge),
	fmt.Errorf("%w %q: not JSON", outputs.ErrInvalidDefault, "x"),
	fmt.Errorf("x: %w", statefile.ErrEncrypted),
	tried(fmt.Errorf("x: %w: %w", statefile.ErrDecrypt, stateencryption.ErrDecryptionFailed)),
	&derivationRefusedError{exceeded: errShareUsed},
	fmt.Errorf("x: %w", statefile.ErrUnsupportedVersion),
}

// TestConditionMessagesStartWithACapital checks every condition message
// that the functions building them produce, from a table of those
// functions and of the inputs that reach each of their messages.
func TestConditionMessagesStartWithACapital(t *testing.T) {
	certs := newTestCertificatesT(t)
	holder := &backendsv1alpha1.LockInfo{ID: "L", Who: "bob@ci", Operation: "OperationTypeApply", Created: new(metav1.NewTime(time.Unix(0, 0)))}
	ref := backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.HttpBackendKind, Name: "app"}
	enc := &backendsv1alpha1.StateEncryption{PassphraseSecretRef: backendsv1alpha1.SecretKeyRef{Name: "pass"}}

	observations := map[string]func() []conditions.Observation{
		"probeFailure": func() []conditions.Observation {
			return each(failures, func(err error) conditions.Observation { return probeFailure(everyKindsFailures, err) })
		},
		"contentFailure":     func() []conditions.Observation { return each(contentFailures, contentFailure) },
		"stateObjectFailure": func() []conditions.Observation { return each(failures, stateObjectFailure) },
		"bucketObservation": func() []conditions.Observation {
			return append(each(failures, func(err error) conditions.Observation { return bucketObservation("b", err) }), bucketObservation("b", nil))
		},
		"stateObservation": func() []conditions.Observation {
			present := &stateclient.StateSummary{Present: true, Summary: statefile.Summary{Serial: 1, Lineage: "l"}}
			return append(each(failures, func(err error) conditions.Observation { return stateObservation(nil, err) }),
				stateObservation(nil, nil), stateObservation(present, nil))
		},
		"unencryptedState": func() []conditions.Observation {
			obs, _ := unencryptedState(enc, &backendsv1alpha1.StateSummary{Present: true, Serial: 3})
			return []conditions.Observation{obs}
		},
		"noState":       func() []conditions.Observation { return []conditions.Observation{noState(ref, "default")} },
		"probeDisabled": func() []conditions.Observation { return []conditions.Observation{*probeDisabled()} },
		"probeFailed":   func() []conditions.Observation { return []conditions.Observation{probeFailed()} },
	}
	stalls := map[string]func() []error{
		"referenceReader.notFound": func() []error {
			r := referenceReader{namespace: "team-a"}
			return []error{r.notFound("Secret", "pw", "spec.passwordSecretRef"), r.notFound("ConfigMap", "ca", "spec.tls.caCertificate")}
		},
		"requiredKeys": func() []error {
			_, err := requiredKeys(builders.MakeSecret("pw", "team-a").Data(map[string]string{"pass": "x"}).Obj(), "spec.passwordSecretRef", "", "password")
			return []error{err}
		},
		"readPassphrase": func() []error {
			c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(builders.MakeSecret("pass", "team-a").Data(map[string]string{
				"short": "fifteen-bytes!!", "nfd": "cafe\u0301-passphrase-0123",
			}).Obj()).Build()
			refs := referenceReader{reader: c, metadata: c, contents: related.NewContents(), namespace: "team-a", policy: ReferencePolicyNamespace}
			var errs []error
			for _, key := range []string{"short", "nfd", "gone"} {
				_, err := readPassphrase(t.Context(), refs, backendsv1alpha1.SecretKeyRef{Name: "pass", Key: key}, "spec.encryption.passphraseSecretRef")
				errs = append(errs, err)
			}
			return errs
		},
		"effectiveRegion": func() []error {
			_, err := effectiveRegion(backendsv1alpha1.CosBackendSpec{}, "")
			return []error{err}
		},
		"checkCertificates and checkKeyPair": func() []error {
			return []error{
				checkCertificates([]byte("hello"), "Secret team-a/ca key ca.crt"),
				checkCertificates([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), "Secret team-a/ca key ca.crt"),
				checkKeyPair(certs.clientCertPEM, []byte("nope"), "Secret team-a/c"),
				checkKeyPair(certs.clientCertPEM, certs.otherKeyPEM, "Secret team-a/c"),
			}
		},
		"checkHTTPSpec": func() []error {
			return []error{
				checkHTTPSpec(backendsv1alpha1.HttpBackendSpec{Address: "https://u:p@s/x"}),
				checkHTTPSpec(backendsv1alpha1.HttpBackendSpec{Address: "https://s/x?token=t"}),
				checkHTTPSpec(backendsv1alpha1.HttpBackendSpec{Address: "http://169.254.169.254/"}),
				checkHTTPSpec(backendsv1alpha1.HttpBackendSpec{Address: "https://s/x", LockMethod: "GET"}),
				checkHTTPSpec(backendsv1alpha1.HttpBackendSpec{Address: "https://s/x", BackendCommonSpec: backendsv1alpha1.BackendCommonSpec{ConfigMapName: "kube-root-ca.crt"}}),
				checkHTTPSpec(backendsv1alpha1.HttpBackendSpec{Address: "https://s/x", Overrides: []backendsv1alpha1.Override{{Path: "address"}}}),
				checkHTTPSpec(backendsv1alpha1.HttpBackendSpec{Address: "%zz"}),
			}
		},
		"checkCosSpec": func() []error {
			return []error{
				checkCosSpec(backendsv1alpha1.CosBackendSpec{Prefix: "a/../b"}),
				checkCosSpec(backendsv1alpha1.CosBackendSpec{Endpoint: "http://cos-internal.ap-guangzhou.tencentcos.cn"}),
			}
		},
		"checkRemoteStateSpec": func() []error {
			return []error{
				checkRemoteStateSpec(backendsv1alpha1.RemoteStateSpec{Workspace: ".."}),
				checkRemoteStateSpec(backendsv1alpha1.RemoteStateSpec{Target: backendsv1alpha1.RemoteStateTarget{SecretName: "sh.helm.release.v1.x"}}),
			}
		},
		"resolveBackendRef of a kind that is no backend": func() []error {
			_, _, _, err := (&reconciler{}).resolveBackendRef(t.Context(), "team-a", backendsv1alpha1.BackendReference{Kind: "Bucket", Name: "b"})
			return []error{err}
		},
		"backendNotReady and joinStalls": func() []error {
			joined := conditions.JoinStalls(conditions.Stall(backendsv1alpha1.SecretNotFoundReason, "Secret team-a/pw does not exist"),
				conditions.Stall(backendsv1alpha1.InvalidCertificateReason, "Secret team-a/c holds no PEM certificate"))
			return []error{joined, backendNotReady(ref, joined)}
		},
		"invalidDefaultMessage": func() []error {
			return []error{conditions.Stall(backendsv1alpha1.InvalidSpecReason, "%s", invalidDefaultMessage(fmt.Errorf("%w: the value of %q is not JSON", outputs.ErrInvalidDefault, "x")))}
		},
	}
	messages := map[string]func() []string{
		"describeHolder": func() []string { return []string{describeHolder(nil), describeHolder(holder)} },
	}

	for name, build := range observations {
		for _, obs := range build() {
			expectCapital(t, name, obs.Message)
		}
	}
	for name, build := range stalls {
		for _, err := range build() {
			se, ok := conditions.AsStall(err)
			if !ok {
				t.Errorf("%s: %v is no stall", name, err)
				continue
			}
			expectCapital(t, name, se.Message)
		}
	}
	for name, build := range messages {
		for _, m := range build() {
			expectCapital(t, name, m)
		}
	}
}

// each is f of every error.
func each(errs []error, f func(error) conditions.Observation) []conditions.Observation {
	out := make([]conditions.Observation, 0, len(errs))
	for _, err := range errs {
		out = append(out, f(err))
	}
	return out
}

// expectCapital checks that message starts with a capital letter.
func expectCapital(t *testing.T, name, message string) {
	t.Helper()
	if r, _ := utf8.DecodeRuneInString(message); !unicode.IsUpper(r) {
		t.Errorf("%s: message %q does not start with a capital letter", name, message)
	}
}
