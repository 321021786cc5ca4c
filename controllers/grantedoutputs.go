package controllers

import (
	"fmt"
	"slices"
	"strings"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/grants"
	"github.com/infrastate/backend-operator/internal/outputs"
)

// What a RemoteState reading a backend of another namespace may publish,
// as pure functions of the OutputGrants' decision (see grants.Decide) and
// of its own status: the messages, the fingerprint, the filter of a read,
// and what a narrower decision removes from what was published.

// grantRequest is what remote, which reads a backend of another
// namespace, asks of that namespace's OutputGrants; the caller fills the
// labels of its namespace.
func grantRequest(remote *backendsv1alpha1.RemoteState) grants.Request {
	return grants.Request{
		Consumer:  remote.Namespace,
		Backend:   remote.Spec.BackendRef.BackendReference,
		Workspace: workspaceOrDefault(remote.Spec.Workspace),
	}
}

// notGrantedMessage is the message of a RemoteState whose backend of
// namespace producer no OutputGrant grants: it depends on the request
// only, never on what producer holds, so that it is the same whether or
// not the backend exists.
func notGrantedMessage(producer string, req grants.Request) string {
	return fmt.Sprintf("No OutputGrant of namespace %s grants %s %s (workspace %s) to namespace %s: "+
		"its owners grant it with an OutputGrant in %s (docs/sharing.md)",
		producer, req.Backend.Kind, req.Backend.Name, req.Workspace, req.Consumer, producer)
}

// notWatchedMessage is the message of a RemoteState whose backend's
// namespace the manager does not watch: it cannot read the grants there.
func notWatchedMessage(producer string) string {
	return fmt.Sprintf("The manager does not watch namespace %s (--watch-namespaces), so it cannot read its OutputGrants: "+
		"read a backend of a namespace it watches, or have it watch %s", producer, producer)
}

// ungrantedSelections are the outputs spec.outputs selects that no grant
// of d may name, in spec order.
func ungrantedSelections(selectors []backendsv1alpha1.OutputSelector, d grants.Decision) []string {
	var names []string
	for _, sel := range selectors {
		if !d.MayName(sel.Name) {
			names = append(names, sel.Name)
		}
	}
	return names
}

// ungrantedSelectionsMessage is the message of a RemoteState that selects
// outputs names the grants of producer do not name.
func ungrantedSelectionsMessage(producer string, req grants.Request, names []string, d grants.Decision) string {
	return fmt.Sprintf("Namespace %s grants %s %s (workspace %s) to namespace %s, but not outputs %s, which spec.outputs selects: "+
		"it grants %s. Ask its owners to add them to the OutputGrant, or leave them out of spec.outputs",
		producer, req.Backend.Kind, req.Backend.Name, req.Workspace, req.Consumer, strings.Join(names, ", "), d.Describe())
}

// grantedMessage is what the message of published outputs adds for a
// RemoteState reading another namespace: what producer grants it.
func grantedMessage(producer string, d grants.Decision) string {
	return fmt.Sprintf("namespace %s grants %s", producer, d.Describe())
}

// grantInputs is the part of a read's fingerprint that the decision
// makes: a grant narrowed or widened makes a read due at once. Describe
// names every output and grant the decision holds, sorted.
func grantInputs(d *grants.Decision) [][]byte {
	if d == nil {
		return nil
	}
	return [][]byte{[]byte("grant"), []byte(d.Describe())}
}

// outputsGrant is the filter of a read under d: only the names its grants
// name are read (every one when a grant grants every plain output), and
// only those it allows are published.
func outputsGrant(d *grants.Decision) *outputs.Grant {
	if d == nil {
		return nil
	}
	return &outputs.Grant{Names: d.Names(), Allows: d.Allows}
}

// grantedState is status.state of a RemoteState reading another
// namespace: the serial, lineage and version of the state, not its size
// nor its number of outputs, which would tell of the outputs not granted.
func grantedState(state *backendsv1alpha1.StateSummary) *backendsv1alpha1.StateSummary {
	out := *state
	out.SizeBytes, out.OutputCount = 0, 0
	return &out
}

// revocation is what a decision removes from the outputs a RemoteState
// published (status.outputs), without reading the state: the outputs it
// no longer allows, by name and sensitivity.
type revocation struct {
	// kept and removed are the entries of status.outputs the decision
	// still allows, and those it does not.
	kept, removed []backendsv1alpha1.OutputStatus
	// truncated is true when status.outputs may not list every output
	// published (it lists the first maxOutputStatuses): the keys it does
	// not list are then judged by name, as published with no selector
	// (the only way to publish that many), from the object they are in.
	truncated bool
	// allows is the decision's.
	allows func(name string, sensitive bool) bool
	// keys are the keys status.outputs lists, by sensitivity, and whether
	// each is kept.
	keys [2]map[string]bool
}

// revocationOf is what d removes from published, status.outputs; listed
// is false when it may not list every output published.
func revocationOf(published []backendsv1alpha1.OutputStatus, listed bool, d grants.Decision) revocation {
	v := revocation{truncated: !listed, allows: d.Allows,
		keys: [2]map[string]bool{{}, {}}}
	for _, o := range published {
		keep := d.Allows(o.Name, o.Sensitive)
		if keep {
			v.kept = append(v.kept, o)
		} else {
			v.removed = append(v.removed, o)
		}
		v.keys[outputClass(o.Sensitive)][o.Key] = keep
	}
	return v
}

// outputClass indexes revocation.keys.
func outputClass(sensitive bool) int {
	if sensitive {
		return 1
	}
	return 0
}

// needed reports whether the published objects must be filtered: an
// output is no longer allowed, or status.outputs may not list them all.
func (v revocation) needed() bool { return len(v.removed) > 0 || v.truncated }

// keep reports whether the key of a published object (the Secret when
// sensitive) stays: as status.outputs says, or, for a key it does not
// list, as the decision allows an output of that name.
func (v revocation) keep(key string, sensitive bool) bool {
	if kept, listed := v.keys[outputClass(sensitive)][key]; listed {
		return kept
	}
	return v.allows(key, sensitive)
}

// plain is the ConfigMap data left of data.
func (v revocation) plain(data map[string]string) map[string]string {
	out := map[string]string{}
	for k, value := range data {
		if v.keep(k, false) {
			out[k] = value
		}
	}
	return out
}

// sensitive is the Secret data left of data.
func (v revocation) sensitive(data map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for k, value := range data {
		if v.keep(k, true) {
			out[k] = value
		}
	}
	return out
}

// revokedMessage says which outputs were removed from the ConfigMap and
// the Secret, and why: names, never values.
func revokedMessage(producer string, removed []backendsv1alpha1.OutputStatus, configMap, secret string) string {
	var plain, sensitive []string
	for _, o := range removed {
		if o.Sensitive {
			sensitive = append(sensitive, o.Key)
		} else {
			plain = append(plain, o.Key)
		}
	}
	slices.Sort(plain)
	slices.Sort(sensitive)
	var parts []string
	if len(plain) > 0 {
		parts = append(parts, fmt.Sprintf("keys %s from ConfigMap %s", strings.Join(plain, ", "), configMap))
	}
	if len(sensitive) > 0 {
		parts = append(parts, fmt.Sprintf("keys %s from Secret %s", strings.Join(sensitive, ", "), secret))
	}
	return fmt.Sprintf("Removed %s: the OutputGrants of namespace %s no longer grant them", strings.Join(parts, " and "), producer)
}

// failureElsewhere is the OutputsReady observation obs of a failed read
// of a backend of producer, another namespace than the reader's: its
// reason only, unless it is about the reader's own selection (an output
// missing, mistyped, too large, a key or a default it chose). A failure
// of the backend or its server (its address, its credentials, the names
// of its passphrases' Secrets, what its server answered) is for the
// producer's owners, who see it in the backend's status; a grant shares
// outputs, nothing else. With producer empty, obs is returned as it is.
func failureElsewhere(obs conditions.Observation, producer string, ref backendsv1alpha1.BackendReference) conditions.Observation {
	if producer == "" {
		return obs
	}
	switch obs.Reason {
	case backendsv1alpha1.OutputMissingReason, backendsv1alpha1.OutputTypeMismatchReason, backendsv1alpha1.OutputKeyInvalidReason,
		backendsv1alpha1.OutputsTooLargeReason, backendsv1alpha1.InvalidSpecReason, backendsv1alpha1.ReferenceNotGrantedReason,
		backendsv1alpha1.BudgetExceededReason:
		return obs
	}
	obs.Message = fmt.Sprintf("Reading the state of %s %s of namespace %s failed (%s): its owners see why in its status, and the outputs published last stay",
		ref.Kind, ref.Name, producer, obs.Reason)
	return obs
}
