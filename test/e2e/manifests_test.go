package e2e

import (
	"fmt"
	"strings"
)

// httpBackend describes an HttpBackend manifest the specs apply.
type httpBackend struct {
	name    string
	address string
	// locking sets lockAddress and unlockAddress to the address.
	locking bool
	// username and passwordSecret set basic auth; the key is "password".
	username, passwordSecret string
	// clientCertSecret names a kubernetes.io/tls Secret for mutual TLS.
	clientCertSecret string
	// caConfigMap names a ConfigMap with the CA bundle in ca.crt.
	caConfigMap string
	// probeInterval defaults to 10s, the shortest the API allows.
	probeInterval string
	lockCheck     bool
	// staleAfter and releaseWhenHolderGone set spec.lockPolicy.
	staleAfter            string
	releaseWhenHolderGone bool
	// retryMax, when not nil, sets spec.retryMax.
	retryMax *int32
	// runnerFlavor sets spec.runner.flavor.
	runnerFlavor string
	// passphraseSecret names the Secret of spec.encryption's passphrase.
	passphraseSecret string
}

// suiteBackend is an HttpBackend on the suite's state server, with basic
// auth and mutual TLS through the objects createStateServerSecrets makes.
func suiteBackend(name, stateName string) httpBackend {
	return httpBackend{
		name: name, address: stateServer.stateURL(stateName), locking: true,
		username: stateUser, passwordSecret: "demo-state-password",
		clientCertSecret: "demo-state-client-tls", caConfigMap: "demo-state-ca",
	}
}

func (b httpBackend) manifest() string {
	var s strings.Builder
	fmt.Fprintf(&s, "apiVersion: backends.infrastate.io/v1alpha1\nkind: HttpBackend\nmetadata:\n  name: %s\nspec:\n", b.name)
	fmt.Fprintf(&s, "  address: %s\n", b.address)
	if b.locking {
		fmt.Fprintf(&s, "  lockAddress: %s\n  unlockAddress: %s\n", b.address, b.address)
	}
	if b.username != "" {
		fmt.Fprintf(&s, "  username: %s\n", b.username)
	}
	if b.passwordSecret != "" {
		fmt.Fprintf(&s, "  passwordSecretRef:\n    name: %s\n", b.passwordSecret)
	}
	if b.clientCertSecret != "" || b.caConfigMap != "" {
		s.WriteString("  tls:\n")
		if b.clientCertSecret != "" {
			fmt.Fprintf(&s, "    clientCertificateSecretRef:\n      name: %s\n", b.clientCertSecret)
		}
		if b.caConfigMap != "" {
			fmt.Fprintf(&s, "    caCertificate:\n      configMapRef:\n        name: %s\n", b.caConfigMap)
		}
	}
	interval := b.probeInterval
	if interval == "" {
		interval = "10s"
	}
	fmt.Fprintf(&s, "  probe:\n    interval: %s\n    lockCheck: %t\n", interval, b.lockCheck)
	if b.staleAfter != "" || b.releaseWhenHolderGone {
		s.WriteString("  lockPolicy:\n")
		if b.staleAfter != "" {
			fmt.Fprintf(&s, "    staleAfter: %s\n", b.staleAfter)
		}
		if b.releaseWhenHolderGone {
			s.WriteString("    releaseWhenHolderGone: true\n")
		}
	}
	if b.retryMax != nil {
		fmt.Fprintf(&s, "  retryMax: %d\n", *b.retryMax)
	}
	if b.runnerFlavor != "" {
		fmt.Fprintf(&s, "  runner:\n    flavor: %s\n", b.runnerFlavor)
	}
	if b.passphraseSecret != "" {
		fmt.Fprintf(&s, "  encryption:\n    passphraseSecretRef:\n      name: %s\n", b.passphraseSecret)
	}
	return s.String()
}

// remoteStateManifest is the manifest of the RemoteState name that reads
// the HttpBackend backend, and refreshes every probeInterval unless it is
// empty (the API's default then).
func remoteStateManifest(name, backend, probeInterval string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "apiVersion: backends.infrastate.io/v1alpha1\nkind: RemoteState\nmetadata:\n  name: %s\nspec:\n", name)
	fmt.Fprintf(&s, "  backendRef:\n    kind: HttpBackend\n    name: %s\n", backend)
	if probeInterval != "" {
		fmt.Fprintf(&s, "  probe:\n    interval: %s\n", probeInterval)
	}
	return s.String()
}
