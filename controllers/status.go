package controllers

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// The condition setters below are pure: they change only the conditions
// they are given, from explicit inputs, and are table-tested.

// observation is the status, reason and message of one condition.
type observation struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

// setCondition sets one condition, keeping LastTransitionTime when the
// status does not change.
func setCondition(conds *[]metav1.Condition, generation int64, condType string, o observation) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               condType,
		Status:             o.status,
		Reason:             o.reason,
		Message:            truncate(o.message),
		ObservedGeneration: generation,
	})
}

// markReconciling records that the controller works on a generation it has
// not finished yet. kstatus reads it as "in progress".
func markReconciling(conds *[]metav1.Condition, generation, observed int64) {
	if generation == observed {
		return
	}
	setCondition(conds, generation, backendsv1alpha1.ReconcilingCondition, observation{
		status: metav1.ConditionTrue, reason: backendsv1alpha1.ProgressingReason,
		message: "Reconciling a new generation",
	})
}

// outcome is how a reconciliation ended, the input of summarize.
type outcome struct {
	// stall is set when the user must change something.
	stall *stallError
	// err is a transient error that will be retried.
	err error
	// readyMessage describes the backend when all went well.
	readyMessage string
	// readyReason is Ready's reason when all went well; "" is Succeeded.
	readyReason string
	// gates are the conditions that gate Ready besides the work of the
	// reconciliation itself (see summarize), in the order that decides
	// which one Ready reports.
	gates []string
	// probePending is true while a probe is under way: a gate not yet
	// observed for this generation is awaited.
	probePending bool
	// applied is the probe result this reconciliation wrote to status; it
	// is acknowledged once the status is patched.
	applied *probeResult
	// waiting, when set, is the Reconciling condition (True) of an object
	// that made all the progress it can and waits on something outside
	// its control (a StateLock waiting for another holder's lock): kstatus
	// reads it as in progress, although the generation was observed.
	waiting *observation
}

// summarize sets Ready, Reconciling and Stalled from the outcome and returns
// the observedGeneration to record. The invariants kstatus relies on hold:
// Ready is always present, Reconciling and Stalled are never both True, and
// observedGeneration moves only after success or a stall.
//
// After success, Ready follows the gates (see gateVerdict). While a probe
// is under way and a gate has not yet been observed for this generation,
// the object is in progress: Reconciling True, Ready Unknown,
// observedGeneration unchanged.
func summarize(conds *[]metav1.Condition, generation, observed int64, out outcome) int64 {
	switch {
	case out.stall != nil:
		meta.RemoveStatusCondition(conds, backendsv1alpha1.ReconcilingCondition)
		o := observation{status: metav1.ConditionTrue, reason: out.stall.reason, message: out.stall.message}
		setCondition(conds, generation, backendsv1alpha1.StalledCondition, o)
		o.status = metav1.ConditionFalse
		setCondition(conds, generation, backendsv1alpha1.ReadyCondition, o)
		return generation

	case out.err != nil:
		meta.RemoveStatusCondition(conds, backendsv1alpha1.StalledCondition)
		o := observation{status: metav1.ConditionTrue, reason: backendsv1alpha1.ReconcileErrorReason,
			message: "Retrying after an error: " + out.err.Error()}
		setCondition(conds, generation, backendsv1alpha1.ReconcilingCondition, o)
		if ready := meta.FindStatusCondition(*conds, backendsv1alpha1.ReadyCondition); ready == nil || ready.Status != metav1.ConditionTrue {
			o.status, o.message = metav1.ConditionFalse, out.err.Error()
			setCondition(conds, generation, backendsv1alpha1.ReadyCondition, o)
		}
		return observed
	}

	meta.RemoveStatusCondition(conds, backendsv1alpha1.StalledCondition)
	if out.probePending && awaitingGate(*conds, generation, out.gates) {
		progressing := observation{status: metav1.ConditionTrue, reason: backendsv1alpha1.ProgressingReason,
			message: "Waiting for the first probe of this generation"}
		setCondition(conds, generation, backendsv1alpha1.ReconcilingCondition, progressing)
		progressing.status, progressing.message = metav1.ConditionUnknown, joinMessages(out.readyMessage, "waiting for the first probe")
		setCondition(conds, generation, backendsv1alpha1.ReadyCondition, progressing)
		return observed
	}
	meta.RemoveStatusCondition(conds, backendsv1alpha1.ReconcilingCondition)
	ready := gateVerdict(*conds, out.gates, out.readyMessage)
	if ready.status == metav1.ConditionTrue && out.readyReason != "" {
		ready.reason = out.readyReason
	}
	setCondition(conds, generation, backendsv1alpha1.ReadyCondition, ready)
	if out.waiting != nil {
		setCondition(conds, generation, backendsv1alpha1.ReconcilingCondition, *out.waiting)
	}
	return generation
}

// notCheckedReasons are the reasons of a gate condition that the user
// turned off (probing disabled) or that the operator cannot check (a role
// it does not assume): such a gate does not gate Ready.
var notCheckedReasons = []string{backendsv1alpha1.ProbeDisabledReason, backendsv1alpha1.AssumeRoleNotSupportedReason}

// gateCounts reports whether c gates Ready: it is present and checked.
func gateCounts(c *metav1.Condition) bool {
	return c != nil && (c.Status != metav1.ConditionUnknown || !slices.Contains(notCheckedReasons, c.Reason))
}

// awaitingGate reports whether a gate has not been observed for
// generation yet: it is absent, or an earlier generation set it.
func awaitingGate(conds []metav1.Condition, generation int64, gates []string) bool {
	for _, gate := range gates {
		if c := meta.FindStatusCondition(conds, gate); c == nil || c.ObservedGeneration != generation {
			return true
		}
	}
	return false
}

// gateVerdict is Ready after a successful reconciliation: the first gate
// that is False, else the first that is Unknown, says why the object is
// not ready (with its reason and message); gates that are absent or not
// checked are ignored; otherwise Ready is True with readyMessage.
func gateVerdict(conds []metav1.Condition, gates []string, readyMessage string) observation {
	var unknown *metav1.Condition
	for _, gate := range gates {
		c := meta.FindStatusCondition(conds, gate)
		switch {
		case !gateCounts(c) || c.Status == metav1.ConditionTrue:
		case c.Status == metav1.ConditionFalse:
			return observation{status: metav1.ConditionFalse, reason: c.Reason, message: c.Message}
		case unknown == nil:
			unknown = c
		}
	}
	if unknown != nil {
		return observation{status: metav1.ConditionUnknown, reason: unknown.Reason, message: unknown.Message}
	}
	return observation{status: metav1.ConditionTrue, reason: backendsv1alpha1.SucceededReason, message: readyMessage}
}

// joinMessages joins two sentences of a message, skipping an empty first.
func joinMessages(first, second string) string {
	if first == "" {
		return strings.ToUpper(second[:1]) + second[1:]
	}
	return first + "; " + second
}

// maxMessageLength bounds condition messages to what the API accepts.
const maxMessageLength = 32768

func truncate(s string) string {
	if len(s) <= maxMessageLength {
		return s
	}
	return clip(s, maxMessageLength-3) + "..."
}
