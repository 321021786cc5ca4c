package v1alpha1

import "time"

// Defaults of the API that are not Terraform's. The code that reads an
// unset field uses these constants; the +kubebuilder:default markers of
// the types cannot name a Go constant and spell the values out, and
// defaults_test.go checks every default of the generated CRDs against its
// constant. The defaults of Terraform's own attributes live with the
// protocol: stateclient.Default* for the http backend, cos.Default* for
// the cos backend.
const (
	// DefaultPasswordKey is the key of an HttpBackend's passwordSecretRef
	// that sets none. SecretKeyRef is shared, so no marker fills it in.
	DefaultPasswordKey = "password"

	// DefaultCAKey is the key of an HttpBackend's tls.caCertificate that
	// holds the PEM bundle.
	DefaultCAKey = "ca.crt"

	// DefaultPassphraseKey is the key of spec.encryption's passphrase
	// references when they set none.
	DefaultPassphraseKey = "passphrase"

	// DefaultWorkspace is the workspace a RemoteState reads, and the one a
	// backend's probe reads: Terraform's default workspace, the only one
	// the http backend has.
	DefaultWorkspace = "default"

	// DefaultOutputType is the type of an OutputSelector that names none:
	// any type is accepted.
	DefaultOutputType = "any"

	// UnobservedGeneration is the status.observedGeneration of an object
	// the controller has not processed yet, so that a new object reads as
	// in progress.
	UnobservedGeneration int64 = -1
)

// Bounds of a probe interval other than 0s, which disables periodic
// probing. The CEL rules of spec.probe.interval (and of the deprecated
// RemoteState spec.interval) spell them out, and the manager's
// --default-probe-interval must lie within them too.
const (
	// MinProbeInterval is the shortest probe interval.
	MinProbeInterval = 10 * time.Second
	// MaxProbeInterval is the longest probe interval.
	MaxProbeInterval = 24 * time.Hour
)
