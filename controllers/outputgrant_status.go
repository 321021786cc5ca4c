package controllers

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/grants"
	"github.com/infrastate/backend-operator/controllers/internal/nslabels"
	"github.com/infrastate/backend-operator/internal/outputs"
)

// The status of an OutputGrant, from explicit inputs: which RemoteStates
// read through it (grantConsumers), what Ready says (grantReadyMessage),
// and what keeps it from serving every namespace it names
// (grantNamespacesVerdict).

// maxListedConsumers is how many RemoteStates status.consumers lists (the
// API's bound); status.consumerCount counts them all.
const maxListedConsumers = 256

// grantConsumers returns the RemoteStates among candidates (those that
// read a backend of grant's namespace) that grant covers, each with the
// outputs it grants among those the RemoteState published, sorted by
// namespace and name: the first maxListedConsumers, and how many there
// are. A RemoteState being deleted reads nothing any more. A namespace
// whose labels the labeler cannot give is covered by name only; labelsErr
// says why its labels are unknown (the first such error).
func grantConsumers(grant *backendsv1alpha1.OutputGrant, candidates []backendsv1alpha1.RemoteState, labels namespaceLabeler) (
	listed []backendsv1alpha1.GrantConsumerStatus, count int32, labelsErr error) {
	type nsLabels struct {
		labels map[string]string
		err    error
	}
	seen := map[string]nsLabels{}
	labelsOf := func(namespace string) nsLabels {
		l, ok := seen[namespace]
		if !ok {
			l.labels, l.err = labels.Labels(namespace)
			seen[namespace] = l
		}
		return l
	}
	var consumers []backendsv1alpha1.GrantConsumerStatus
	for i := range candidates {
		rs := &candidates[i]
		if producerOf(rs) != grant.Namespace || !rs.DeletionTimestamp.IsZero() {
			continue
		}
		l := labelsOf(rs.Namespace)
		if l.err != nil && labelsErr == nil {
			labelsErr = l.err
		}
		req := grants.Request{Consumer: rs.Namespace, ConsumerLabels: l.labels, LabelsUnknown: l.err != nil,
			Backend: rs.Spec.BackendRef.BackendReference, Workspace: workspaceOrDefault(rs.Spec.Workspace)}
		if !grants.Covers(grant.Spec, req) {
			continue
		}
		consumers = append(consumers, backendsv1alpha1.GrantConsumerStatus{Namespace: rs.Namespace, Name: rs.Name,
			Backend: req.Backend, Outputs: grantedOutputs(grant.Spec, req, rs.Status.Outputs)})
	}
	slices.SortFunc(consumers, func(a, b backendsv1alpha1.GrantConsumerStatus) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return consumers[:min(len(consumers), maxListedConsumers)], int32(min(len(consumers), 1<<31-1)), labelsErr
}

// grantedOutputs are the outputs spec grants to req among those a
// RemoteState published, sorted: a sensitive one where sensitiveOutputs
// names it, another where outputs names it or grants every one. An output
// that came from the RemoteState's own spec.defaults was not read from
// the grant's namespace: it is not listed.
func grantedOutputs(spec backendsv1alpha1.OutputGrantSpec, req grants.Request, published []backendsv1alpha1.OutputStatus) []string {
	decision := grants.Decide([]backendsv1alpha1.OutputGrant{{Spec: spec}}, req)
	var names []string
	for _, o := range published {
		if o.Type != outputs.DefaultType && decision.Allows(o.Name, o.Sensitive) {
			names = append(names, o.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// grantOutcome is how the reconciliation of grant ends once its phases
// succeeded, for a manager that watches the namespaces watched (all when
// empty) and reads namespace labels with labelsErr: Ready says what it
// grants and to how many RemoteStates, or, False, which namespaces it
// names it cannot serve, and why.
func grantOutcome(grant *backendsv1alpha1.OutputGrant, watched []string, labelsErr error) conditions.Outcome {
	message := grantReadyMessage(grant.Spec, grant.Status.ConsumerCount)
	notReady, note := grantNamespacesVerdict(grant.Spec.To, watched, labelsErr)
	if note != "" {
		message += "; " + note
	}
	if notReady != nil {
		notReady.Message += ". " + message
	}
	return conditions.Outcome{ReadyMessage: message, NotReady: notReady}
}

// grantReadyMessage says what spec grants, and to how many RemoteStates.
func grantReadyMessage(spec backendsv1alpha1.OutputGrantSpec, consumers int32) string {
	var what string
	switch {
	case len(spec.Outputs) == 0:
		what = "every non-sensitive output"
	default:
		what = "outputs " + nameList(spec.Outputs)
	}
	if len(spec.SensitiveOutputs) > 0 {
		what += " and sensitive outputs " + nameList(spec.SensitiveOutputs)
	}
	backends := "every backend"
	if len(spec.Backends) > 0 {
		refs := make([]string, 0, len(spec.Backends))
		for _, b := range spec.Backends {
			refs = append(refs, b.Kind+" "+b.Name)
		}
		backends = nameList(refs)
	}
	if len(spec.Workspaces) > 0 {
		backends += " (workspaces " + nameList(spec.Workspaces) + ")"
	}
	return fmt.Sprintf("Grants %s of %s to %d %s", what, backends, consumers, plural(int(consumers), "RemoteState", "RemoteStates"))
}

// maxNamesInMessage bounds the names a message lists.
const maxNamesInMessage = 10

// nameList lists names, sorted, the first maxNamesInMessage only.
func nameList(names []string) string {
	sorted := slices.Sorted(slices.Values(names))
	if len(sorted) <= maxNamesInMessage {
		return strings.Join(sorted, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(sorted[:maxNamesInMessage], ", "), len(sorted)-maxNamesInMessage)
}

// grantNamespacesVerdict says what keeps a grant whose consumers are to
// from serving every namespace it names, for a manager that watches the
// namespaces watched (all when empty) and reads namespace labels with
// labelsErr (nil when they are known):
//   - notReady (Ready False, NamespaceNotWatched) when to names a namespace
//     the manager does not watch (the RemoteStates there are never seen),
//     or has a selector while no label can be read (no selector matches);
//   - note, for Ready's message, when to has a selector and the manager
//     watches some namespaces only: it can match those only. A selector
//     matching none of them is no error: a namespace may be labelled later.
func grantNamespacesVerdict(to []backendsv1alpha1.GrantConsumer, watched []string, labelsErr error) (notReady *conditions.Observation, note string) {
	var unwatched []string
	selectors := false
	for _, c := range to {
		switch {
		case c.NamespaceSelector != nil:
			selectors = true
		case len(watched) > 0 && !slices.Contains(watched, c.Namespace) && !slices.Contains(unwatched, c.Namespace):
			unwatched = append(unwatched, c.Namespace)
		}
	}
	var problems []string
	if len(unwatched) > 0 {
		problems = append(problems, fmt.Sprintf("The manager watches only the namespaces %s (--watch-namespaces): this grant cannot serve the RemoteStates of %s %s, which spec.to names",
			nameList(watched), plural(len(unwatched), "namespace", "namespaces"), nameList(unwatched)))
	}
	if selectors && labelsErr != nil {
		msg := "The namespace selectors of spec.to match no namespace: " + strings.TrimPrefix(labelsErr.Error(), nslabels.ErrUnknown.Error()+": ")
		if errors.Is(labelsErr, nslabels.ErrNotAllowed) {
			msg += " (a ClusterRole allowing it to list and watch namespaces lets them match: docs/namespaced.md)"
		}
		problems = append(problems, msg)
	}
	if selectors && labelsErr == nil && len(watched) > 0 {
		note = "its namespace selectors can match only the namespaces the manager watches: " + nameList(watched)
	}
	if len(problems) == 0 {
		return nil, note
	}
	return &conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.NamespaceNotWatchedReason,
		Message: strings.Join(problems, ". ")}, note
}
