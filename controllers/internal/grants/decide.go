package grants

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// Request is what a RemoteState of another namespace asks of the
// producer's namespace.
type Request struct {
	// Consumer is the RemoteState's namespace; ConsumerLabels its labels
	// as the manager sees them now. LabelsUnknown says the manager cannot
	// read them (it may not watch namespaces): no selector matches then,
	// not even an empty one, and only grants naming the namespace cover it.
	Consumer       string
	ConsumerLabels map[string]string
	LabelsUnknown  bool
	// Backend is the backend it reads, in the producer's namespace, and
	// Workspace the workspace.
	Backend   backendsv1alpha1.BackendReference
	Workspace string
}

// Decision is what the grants of the producer's namespace give a
// Request. The zero Decision grants nothing.
type Decision struct {
	// Grants are the names of the grants that cover the request, sorted;
	// none when it is not granted.
	Grants []string
	// everyPlain is true when a covering grant grants every
	// non-sensitive output.
	everyPlain bool
	// plain and sensitive are the outputs granted by name.
	plain, sensitive map[string]bool
}

// Granted reports whether any grant covers the request: the backend may
// be read, for the outputs Allows allows.
func (d Decision) Granted() bool { return len(d.Grants) > 0 }

// Allows reports whether the output name, sensitive or not, may be
// published.
func (d Decision) Allows(name string, sensitive bool) bool {
	if sensitive {
		return d.sensitive[name]
	}
	return d.everyPlain || d.plain[name] || d.sensitive[name]
}

// MayName reports whether an output the consumer selects by name may be
// granted, before its sensitivity is known: a grant names it, or grants
// every non-sensitive output.
func (d Decision) MayName(name string) bool {
	return d.everyPlain || d.plain[name] || d.sensitive[name]
}

// Names is the set of outputs the grants name, for reading only those;
// nil when a grant grants every non-sensitive output (any name may be).
func (d Decision) Names() map[string]bool {
	if d.everyPlain {
		return nil
	}
	names := maps.Clone(d.plain)
	if names == nil {
		names = map[string]bool{}
	}
	maps.Copy(names, d.sensitive)
	return names
}

// Describe says what the decision grants, for messages: the grants and
// the outputs.
func (d Decision) Describe() string {
	if !d.Granted() {
		return "nothing"
	}
	var parts []string
	switch {
	case d.everyPlain:
		parts = append(parts, "every non-sensitive output")
	case len(d.plain) > 0:
		parts = append(parts, "outputs "+strings.Join(slices.Sorted(maps.Keys(d.plain)), ", "))
	}
	if len(d.sensitive) > 0 {
		parts = append(parts, "sensitive outputs "+strings.Join(slices.Sorted(maps.Keys(d.sensitive)), ", "))
	}
	if len(parts) == 0 {
		parts = append(parts, "no output")
	}
	return fmt.Sprintf("%s (OutputGrant %s)", strings.Join(parts, " and "), strings.Join(d.Grants, ", "))
}

// Decide returns what grants (the OutputGrants of the producer's
// namespace) give req. A grant being deleted grants nothing; a consumer
// entry whose selector does not parse matches no namespace (the grant's
// own status says why).
func Decide(grants []backendsv1alpha1.OutputGrant, req Request) Decision {
	var d Decision
	for i := range grants {
		g := &grants[i]
		if !g.DeletionTimestamp.IsZero() || !Covers(g.Spec, req) {
			continue
		}
		d.Grants = append(d.Grants, g.Name)
		if len(g.Spec.Outputs) == 0 {
			d.everyPlain = true
		}
		for _, name := range g.Spec.Outputs {
			d.plain = add(d.plain, name)
		}
		for _, name := range g.Spec.SensitiveOutputs {
			d.sensitive = add(d.sensitive, name)
		}
	}
	slices.Sort(d.Grants)
	return d
}

// Covers reports whether spec grants req's backend and workspace to req's
// namespace, whatever outputs it names.
func Covers(spec backendsv1alpha1.OutputGrantSpec, req Request) bool {
	return coversBackend(spec.Backends, req.Backend) &&
		(len(spec.Workspaces) == 0 || slices.Contains(spec.Workspaces, req.Workspace)) &&
		coversConsumer(spec.To, req.Consumer, req.ConsumerLabels, req.LabelsUnknown)
}

// coversBackend reports whether backends (empty: all) names backend.
func coversBackend(backends []backendsv1alpha1.BackendReference, backend backendsv1alpha1.BackendReference) bool {
	return len(backends) == 0 || slices.Contains(backends, backend)
}

// coversConsumer reports whether an entry of to names namespace, by name
// or by a selector its labels match; with labels unknown, by name only.
func coversConsumer(to []backendsv1alpha1.GrantConsumer, namespace string, nsLabels map[string]string, labelsUnknown bool) bool {
	for _, c := range to {
		switch {
		case c.Namespace != "":
			if c.Namespace == namespace {
				return true
			}
		case c.NamespaceSelector != nil && !labelsUnknown:
			selector, err := metav1.LabelSelectorAsSelector(c.NamespaceSelector)
			if err == nil && selector.Matches(labels.Set(nsLabels)) {
				return true
			}
		}
	}
	return false
}

// InvalidSelectors returns, for a grant's status, why each selector of to
// that does not parse matches nothing.
func InvalidSelectors(to []backendsv1alpha1.GrantConsumer) []string {
	var out []string
	for i, c := range to {
		if c.NamespaceSelector == nil {
			continue
		}
		if _, err := metav1.LabelSelectorAsSelector(c.NamespaceSelector); err != nil {
			out = append(out, fmt.Sprintf("spec.to[%d].namespaceSelector: %v", i, err))
		}
	}
	return out
}

// add adds name to set, making it when nil.
func add(set map[string]bool, name string) map[string]bool {
	if set == nil {
		set = map[string]bool{}
	}
	set[name] = true
	return set
}
