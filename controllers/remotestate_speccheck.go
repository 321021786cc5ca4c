package controllers

import (
	"strings"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
)

// checkRemoteStateSpec refuses what the admission rules of a RemoteState
// refuse: a workspace that leaves the prefix and system object names.
// Output keys and defaults are checked where they are used.
func checkRemoteStateSpec(spec backendsv1alpha1.RemoteStateSpec) error {
	if spec.Workspace == "." || spec.Workspace == ".." {
		return conditions.Stall(backendsv1alpha1.InvalidSpecReason, "The value of spec.workspace must not be '.' or '..': they would reach objects outside the backend's prefix")
	}
	if err := checkConfigMapName("spec.target.configMapName", spec.Target.ConfigMapName); err != nil {
		return err
	}
	if strings.HasPrefix(spec.Target.SecretName, "sh.helm.release.v1.") {
		return conditions.Stall(backendsv1alpha1.InvalidSpecReason, "The value of spec.target.secretName must not be a Helm release Secret name (sh.helm.release.v1.*)")
	}
	return nil
}
