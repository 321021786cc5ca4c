package controllers

import (
	"cmp"
	"slices"
	"strings"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// httpProbedAttributes maps the http backend attributes that the probe
// and RemoteState read from typed fields to those fields. An override of
// one would make runners use a setting that status does not describe.
var httpProbedAttributes = map[string]string{
	"address":                "spec.address",
	"lock_address":           "spec.lockAddress",
	"lock_method":            "spec.lockMethod",
	"unlock_address":         "spec.unlockAddress",
	"unlock_method":          "spec.unlockMethod",
	"username":               "spec.username",
	"skip_cert_verification": "spec.skipCertVerification",
	"retry_max":              "spec.retryMax",
	"retry_wait_min":         "spec.retryWaitMin",
	"retry_wait_max":         "spec.retryWaitMax",
}

// checkHTTPSpec refuses what the admission rules of an HttpBackend refuse
// and the renderer or the probe would otherwise use: credentials in a URL,
// link-local and cloud metadata addresses, lock methods servers do not
// use, lock or unlock requests that are writes of the state (see
// checkLockNotUpdate), overrides of what the probe reads from typed
// fields, and system object names.
func checkHTTPSpec(spec backendsv1alpha1.HttpBackendSpec) error {
	for _, f := range []struct{ field, value string }{
		{"spec.address", spec.Address}, {"spec.lockAddress", spec.LockAddress}, {"spec.unlockAddress", spec.UnlockAddress},
	} {
		if f.value == "" {
			continue
		}
		if err := checkURL(f.field, f.value); err != nil {
			return err
		}
	}
	for _, f := range []struct{ field, value string }{{"spec.lockMethod", spec.LockMethod}, {"spec.unlockMethod", spec.UnlockMethod}} {
		if f.value != "" && !slices.Contains(lockMethods, f.value) {
			return conditions.Stall(backendsv1alpha1.InvalidSpecReason, "The value of %s must be one of %s, the methods state servers use", f.field, strings.Join(lockMethods, ", "))
		}
	}
	if err := checkLockNotUpdate(spec); err != nil {
		return err
	}
	if err := checkProbedOverrides(spec.Overrides, httpProbedAttributes); err != nil {
		return err
	}
	return checkConfigMapName("spec.configMapName", spec.ConfigMapName)
}

// checkLockNotUpdate refuses a lock or unlock request that the server
// takes for a write of the state: sent to the state's own address with
// the update method in effect (updateMethod, POST when unset), it would
// replace the state with the lock's LockInfo. Empty methods are their
// defaults, as Terraform reads them.
func checkLockNotUpdate(spec backendsv1alpha1.HttpBackendSpec) error {
	update := cmp.Or(spec.UpdateMethod, stateclient.DefaultUpdateMethod)
	for _, f := range []struct{ name, address, method string }{
		{"lock", spec.LockAddress, cmp.Or(spec.LockMethod, stateclient.DefaultLockMethod)},
		{"unlock", spec.UnlockAddress, cmp.Or(spec.UnlockMethod, stateclient.DefaultUnlockMethod)},
	} {
		if f.address != "" && f.address == spec.Address && f.method == update {
			return conditions.Stall(backendsv1alpha1.InvalidSpecReason,
				"The value of spec.%sAddress equals spec.address, and spec.%sMethod equals spec.updateMethod (%s): the server would take every %s request for a write of the state "+
					"and replace the state with the lock's LockInfo; set another spec.%sMethod or another spec.%sAddress",
				f.name, f.name, update, f.name, f.name, f.name)
		}
	}
	return nil
}
