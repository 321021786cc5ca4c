package v1alpha1

// AllowReferenceLabel marks a Secret or ConfigMap that backends may
// reference when the manager runs with --secret-reference-policy=labeled;
// its value must be "true".
const AllowReferenceLabel = "backends.infrastate.io/allow-reference"
