package controllers

import (
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/netguard"
)

// The checks of this file repeat the API's admission rules in the
// controller. The API server does not validate again the fields of an
// object stored before a rule existed (CRD validation ratchets unchanged
// fields), so the controller refuses such specs itself, before it reads a
// Secret or renders anything. Messages name the field, never its value:
// it may hold a credential. Every function is pure and table-tested.

// lockMethods are the lock and unlock methods state servers use.
var lockMethods = []string{"LOCK", "UNLOCK", "POST", "PUT", "DELETE", "PATCH"}

// credentialParameter matches the names of query parameters that carry
// credentials, as the admission rule does.
var credentialParameter = regexp.MustCompile(`(?i)^(token|access_token|private_token|auth|auth_token|password|passwd|pwd|secret|client_secret|api_key|apikey|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential)$`)

// metadataHosts are the host names of cloud metadata services.
var metadataHosts = []string{"metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal", "metadata.tencentyun.com"}

// checkProbedOverrides refuses an override whose path is one of probed,
// the attributes the probe and RemoteState read from typed fields, naming
// the field to set instead.
func checkProbedOverrides(overrides []backendsv1alpha1.Override, probed map[string]string) error {
	for i, o := range overrides {
		if field, ok := probed[o.Path]; ok {
			return conditions.Stall(backendsv1alpha1.InvalidSpecReason,
				"The override spec.overrides[%d] sets %s, which the probe and RemoteState read from %s: set %s instead, or status would describe another backend than the one runners use",
				i, o.Path, field, field)
		}
	}
	return nil
}

// checkURL refuses user information, credential query parameters,
// unspecified addresses and link-local or metadata hosts in a URL field.
func checkURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return conditions.Stall(backendsv1alpha1.InvalidSpecReason, "The value of %s is not a valid URL", field)
	}
	if u.User != nil {
		return conditions.Stall(backendsv1alpha1.InvalidSpecReason,
			"The value of %s must not contain user information (user:password@host): it would be published in the rendered ConfigMap; set username and passwordSecretRef instead", field)
	}
	for name := range u.Query() {
		if credentialParameter.MatchString(name) {
			return conditions.Stall(backendsv1alpha1.InvalidSpecReason,
				"The value of %s must not carry credentials in its query string (parameter %s): it is published in the rendered ConfigMap; set username and passwordSecretRef instead", field, name)
		}
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	addr, err := netip.ParseAddr(host)
	if err == nil && addr.Unmap().IsUnspecified() {
		return conditions.Stall(backendsv1alpha1.InvalidSpecReason,
			"The value of %s must not be an unspecified address (0.0.0.0 or ::): a connection to it reaches the local host", field)
	}
	if (err == nil && !netguard.DefaultPolicy().Allows(addr)) || slices.Contains(metadataHosts, host) {
		return conditions.Stall(backendsv1alpha1.InvalidSpecReason, "The value of %s must not point at a link-local address or a cloud metadata service", field)
	}
	return nil
}

// checkConfigMapName refuses the names that Kubernetes or cluster add-ons
// publish in every namespace: the operator would fight them over it.
func checkConfigMapName(field, name string) error {
	if name == "kube-root-ca.crt" || name == "openshift-service-ca.crt" || strings.HasSuffix(name, "-ca-root-cert") {
		return conditions.Stall(backendsv1alpha1.InvalidSpecReason,
			"The value of %s must not be a name that Kubernetes or a cluster add-on publishes in every namespace (kube-root-ca.crt, openshift-service-ca.crt, *-ca-root-cert)", field)
	}
	return nil
}
