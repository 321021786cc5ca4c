package controllers

import (
	"slices"
	"strings"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
)

// cosProbedAttributes maps the cos backend attributes that the probe and
// RemoteState read from typed fields (the COS client's configuration) to
// those fields.
var cosProbedAttributes = map[string]string{
	"bucket":     "spec.bucket",
	"region":     "spec.region",
	"prefix":     "spec.prefix",
	"key":        "spec.key",
	"accelerate": "spec.accelerate",
	"endpoint":   "spec.endpoint",
}

// checkCosSpec refuses what the admission rules of a CosBackend refuse
// and the renderer would otherwise write: '..' segments that leave the
// prefix, an http:// endpoint not explicitly allowed, overrides of what
// the probe reads from typed fields, and system object names.
func checkCosSpec(spec backendsv1alpha1.CosBackendSpec) error {
	for _, f := range []struct{ field, value string }{{"spec.prefix", spec.Prefix}, {"spec.key", spec.Key}} {
		if slices.Contains(strings.Split(f.value, "/"), "..") {
			return conditions.Stall(backendsv1alpha1.InvalidSpecReason, "The value of %s must not contain '..' path segments: they would reach objects outside the prefix", f.field)
		}
	}
	if strings.HasPrefix(spec.Endpoint, "http://") && !spec.AllowInsecureEndpoint {
		return conditions.Stall(backendsv1alpha1.InvalidSpecReason,
			"The value of spec.endpoint uses http://, which sends the security token and the state in clear text: use https:// or set allowInsecureEndpoint")
	}
	if err := checkProbedOverrides(spec.Overrides, cosProbedAttributes); err != nil {
		return err
	}
	return checkConfigMapName("spec.configMapName", spec.ConfigMapName)
}
