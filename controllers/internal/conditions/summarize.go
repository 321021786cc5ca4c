package conditions

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// The condition setters below are pure: they change only the conditions
// they are given, from explicit inputs, and are table-tested.

// Observation is the status, reason and message of one condition.
type Observation struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Set sets one condition, keeping LastTransitionTime when the
// status does not change.
func Set(conds *[]metav1.Condition, generation int64, condType string, o Observation) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               condType,
		Status:             o.Status,
		Reason:             o.Reason,
		Message:            Truncate(o.Message),
		ObservedGeneration: generation,
	})
}

// MarkReconciling records that the controller works on a generation it has
// not finished yet. kstatus reads it as "in progress".
func MarkReconciling(conds *[]metav1.Condition, generation, observed int64) {
	if generation == observed {
		return
	}
	Set(conds, generation, backendsv1alpha1.ReconcilingCondition, Observation{
		Status: metav1.ConditionTrue, Reason: backendsv1alpha1.ProgressingReason,
		Message: "Reconciling a new generation",
	})
}

// Outcome is how a reconciliation ended, the input of Summarize.
type Outcome struct {
	// Stall is set when the user must change something.
	Stall *StallError
	// Err is a transient error that will be retried.
	Err error
	// ReadyMessage describes the backend when all went well.
	ReadyMessage string
	// ReadyReason is Ready's reason when all went well; "" is Succeeded.
	ReadyReason string
	// Gates are the conditions that gate Ready besides the work of the
	// reconciliation itself (see Summarize), in the order that decides
	// which one Ready reports.
	Gates []string
	// ProbePending is true while a probe is under way: a gate not yet
	// observed for this generation is awaited.
	ProbePending bool
	// NotReady, when set, is Ready (False or Unknown) after a
	// reconciliation whose phases all succeeded: the object did all it
	// can and observed its generation, and something its spec cannot
	// change keeps it from doing all its spec asks (an OutputGrant naming
	// a namespace the manager does not watch). A gate that is not True
	// wins over it.
	NotReady *Observation
	// Waiting, when set, is the Reconciling condition (True) of an object
	// that made all the progress it can and waits on something outside
	// its control (a StateLock Waiting for another holder's lock): kstatus
	// reads it as in progress, although the generation was observed.
	Waiting *Observation
}

// Summarize sets Ready, Reconciling and Stalled from the outcome and returns
// the observedGeneration to record. The invariants kstatus relies on hold:
// Ready is always present, Reconciling and Stalled are never both True, and
// observedGeneration moves only after success or a stall.
//
// After success, Ready follows the gates (see gateVerdict). While a probe
// is under way and a gate has not yet been observed for this generation,
// the object is in progress: Reconciling True, Ready Unknown,
// observedGeneration unchanged.
func Summarize(conds *[]metav1.Condition, generation, observed int64, out Outcome) int64 {
	switch {
	case out.Stall != nil:
		meta.RemoveStatusCondition(conds, backendsv1alpha1.ReconcilingCondition)
		o := Observation{Status: metav1.ConditionTrue, Reason: out.Stall.Reason, Message: out.Stall.Message}
		Set(conds, generation, backendsv1alpha1.StalledCondition, o)
		o.Status = metav1.ConditionFalse
		Set(conds, generation, backendsv1alpha1.ReadyCondition, o)
		return generation

	case out.Err != nil:
		meta.RemoveStatusCondition(conds, backendsv1alpha1.StalledCondition)
		o := Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.ReconcileErrorReason,
			Message: "Retrying after an error: " + out.Err.Error()}
		Set(conds, generation, backendsv1alpha1.ReconcilingCondition, o)
		if ready := meta.FindStatusCondition(*conds, backendsv1alpha1.ReadyCondition); ready == nil || ready.Status != metav1.ConditionTrue {
			o.Status, o.Message = metav1.ConditionFalse, out.Err.Error()
			Set(conds, generation, backendsv1alpha1.ReadyCondition, o)
		}
		return observed
	}

	meta.RemoveStatusCondition(conds, backendsv1alpha1.StalledCondition)
	if out.ProbePending && awaitingGate(*conds, generation, out.Gates) {
		progressing := Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.ProgressingReason,
			Message: "Waiting for the first probe of this generation"}
		Set(conds, generation, backendsv1alpha1.ReconcilingCondition, progressing)
		progressing.Status, progressing.Message = metav1.ConditionUnknown, JoinMessages(out.ReadyMessage, "waiting for the first probe")
		Set(conds, generation, backendsv1alpha1.ReadyCondition, progressing)
		return observed
	}
	meta.RemoveStatusCondition(conds, backendsv1alpha1.ReconcilingCondition)
	ready := GateVerdict(*conds, out.Gates, out.ReadyMessage)
	switch {
	case ready.Status != metav1.ConditionTrue:
	case out.NotReady != nil:
		ready = *out.NotReady
	case out.ReadyReason != "":
		ready.Reason = out.ReadyReason
	}
	Set(conds, generation, backendsv1alpha1.ReadyCondition, ready)
	if out.Waiting != nil {
		Set(conds, generation, backendsv1alpha1.ReconcilingCondition, *out.Waiting)
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

// GateVerdict is Ready after a successful reconciliation: the first gate
// that is False, else the first that is Unknown, says why the object is
// not ready (with its reason and message); gates that are absent or not
// checked are ignored; otherwise Ready is True with readyMessage.
func GateVerdict(conds []metav1.Condition, gates []string, readyMessage string) Observation {
	var unknown *metav1.Condition
	for _, gate := range gates {
		c := meta.FindStatusCondition(conds, gate)
		switch {
		case !gateCounts(c) || c.Status == metav1.ConditionTrue:
		case c.Status == metav1.ConditionFalse:
			return Observation{Status: metav1.ConditionFalse, Reason: c.Reason, Message: c.Message}
		case unknown == nil:
			unknown = c
		}
	}
	if unknown != nil {
		return Observation{Status: metav1.ConditionUnknown, Reason: unknown.Reason, Message: unknown.Message}
	}
	return Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.SucceededReason, Message: readyMessage}
}

// JoinMessages joins two sentences of a message, skipping an empty first.
func JoinMessages(first, second string) string {
	if first == "" {
		return strings.ToUpper(second[:1]) + second[1:]
	}
	return first + "; " + second
}

// maxMessageLength bounds condition messages to what the API accepts.
const maxMessageLength = 32768

// Truncate clips a condition message to maxMessageLength, marking the
// cut with an ellipsis.
func Truncate(s string) string {
	if len(s) <= maxMessageLength {
		return s
	}
	return Clip(s, maxMessageLength-3) + "..."
}
