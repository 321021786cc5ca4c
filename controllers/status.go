package controllers

import (
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
	// probe is the condition the probe set (StateReachable or BucketReady),
	// or "" when probing is disabled.
	probe string
	// probePending is true while a probe is under way.
	probePending bool
	// applied is the probe result this reconciliation wrote to status; it
	// is acknowledged once the status is patched.
	applied *probeResult
}

// summarize sets Ready, Reconciling and Stalled from the outcome and returns
// the observedGeneration to record. The invariants kstatus relies on hold:
// Ready is always present, Reconciling and Stalled are never both True, and
// observedGeneration moves only after success or a stall. While the first
// probe of a generation is under way the object is in progress: Reconciling
// True, Ready Unknown, observedGeneration unchanged.
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
	if probe := meta.FindStatusCondition(*conds, out.probe); out.probePending && out.probe != "" && (probe == nil || probe.ObservedGeneration != generation) {
		progressing := observation{status: metav1.ConditionTrue, reason: backendsv1alpha1.ProgressingReason,
			message: "Waiting for the first probe of this generation"}
		setCondition(conds, generation, backendsv1alpha1.ReconcilingCondition, progressing)
		progressing.status, progressing.message = metav1.ConditionUnknown, joinMessages(out.readyMessage, "waiting for the first probe")
		setCondition(conds, generation, backendsv1alpha1.ReadyCondition, progressing)
		return observed
	}
	meta.RemoveStatusCondition(conds, backendsv1alpha1.ReconcilingCondition)
	ready := observation{status: metav1.ConditionTrue, reason: backendsv1alpha1.SucceededReason, message: out.readyMessage}
	if out.probe != "" {
		if probe := meta.FindStatusCondition(*conds, out.probe); probe != nil && probe.Status != metav1.ConditionTrue {
			ready = observation{status: metav1.ConditionFalse, reason: probe.Reason, message: probe.Message}
			if probe.Status == metav1.ConditionUnknown {
				ready.status = metav1.ConditionUnknown
			}
		}
	}
	setCondition(conds, generation, backendsv1alpha1.ReadyCondition, ready)
	return generation
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
