package controllers

import (
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/contenthash"
)

// What every kind's probe shares: its bounds, its interval, and the
// decision of what one reconcile does about it.

const (
	// probeTimeout bounds one probe, retries included.
	probeTimeout = 2 * time.Minute
	// probeAttemptTimeout bounds one attempt of a probe, from the dial to
	// the end of the body: a server that accepts and never answers costs
	// this much per attempt, not probeTimeout.
	probeAttemptTimeout = 30 * time.Second
)

// probeInterval is the period of a probe spec, def (the manager's
// --default-probe-interval) when it sets none: the API server leaves it
// unset. 0 turns periodic probing off.
func probeInterval(p *backendsv1alpha1.ProbeSpec, def time.Duration) time.Duration {
	if p == nil || p.Interval == nil {
		return def
	}
	return p.Interval.Duration
}

// probeDisabled is the observation of a probe condition while
// probe.interval is 0s.
func probeDisabled() *conditions.Observation {
	return &conditions.Observation{Status: metav1.ConditionUnknown, Reason: backendsv1alpha1.ProbeDisabledReason,
		Message: "Probing is disabled: spec.probe.interval is 0s. Set an interval to have the state checked"}
}

// probeFailed is the observation of a probe condition whose probe
// panicked.
func probeFailed() conditions.Observation {
	return conditions.Observation{Status: metav1.ConditionUnknown, Reason: backendsv1alpha1.ProbeFailedReason,
		Message: "The probe stopped on an internal error of the operator; the next probe runs at the next interval. " +
			"Report it with the manager's log, which records it with its stack"}
}

// identity is the part of a probe fingerprint that names obj and its
// generation: a new generation makes a probe due at once.
func identity(obj client.Object) [][]byte {
	return [][]byte{[]byte(obj.GetUID()), []byte(strconv.FormatInt(obj.GetGeneration(), 10))}
}

// fingerprint hashes probe inputs, so that the schedule notices rotated
// credentials without keeping them. A fingerprint of probe inputs never
// leaves the process; the content hashes of the rendered objects use the
// same function (contenthash.Sum) on data that those objects hold anyway.
func fingerprint(parts ...[]byte) string { return contenthash.Sum(parts...) }
