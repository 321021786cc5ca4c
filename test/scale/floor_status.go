package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// floorLockMessage is the operator's Locked message for a backend whose
// lock it does not check (no probe.lockCheck) and that no StateLock holds
// (controllers/backend_statelocks.go and controllers/httpbackend.go). The
// floor writes the same bytes, so that its status patches cost the API
// server what the operator's do.
const floorLockMessage = "The lock is not checked, and no StateLock holds it: " +
	"spec.probe.lockCheck is off, and the REST protocol shows a lock's holder only to a lock attempt. " +
	"Set probe.lockCheck to true (with lockAddress and unlockAddress) to see every holder."

// floorProbe reads a backend's state as the operator's probe does, with
// internal/stateclient (one GET of the address, with its username and
// password, the answer read by the protocol's rules and summarized as it
// streams), and returns status.state for it. Every backend's client sends
// through shared, so that the floor keeps its connections alive across
// backends; a failed read is not retried but requeued.
func floorProbe(ctx context.Context, shared http.RoundTripper, b *backendsv1alpha1.HttpBackend, password []byte) (*backendsv1alpha1.StateSummary, error) {
	cfg := stateclient.DefaultConfig(b.Spec.Address)
	cfg.Username, cfg.Password = b.Spec.Username, string(password)
	cfg.RetryMax, cfg.AttemptTimeout = 0, 30*time.Second
	sc, err := stateclient.New(cfg, stateclient.WithWrapTransport(func(http.RoundTripper) http.RoundTripper { return shared }))
	if err != nil {
		return nil, fmt.Errorf("the state client of %s/%s: %w", b.Namespace, b.Name, err)
	}
	summary, err := sc.FetchSummary(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("probing %s/%s: %w", b.Namespace, b.Name, err)
	}
	return floorState(summary), nil
}

// floorState is status.state for what the probe read.
func floorState(s *stateclient.StateSummary) *backendsv1alpha1.StateSummary {
	if !s.Present {
		return &backendsv1alpha1.StateSummary{Present: false}
	}
	return &backendsv1alpha1.StateSummary{
		Present: true, Serial: int64(min(s.Serial, math.MaxInt64)), Lineage: s.Lineage, TerraformVersion: s.TerraformVersion,
		SizeBytes: s.SizeBytes, OutputCount: int32(min(s.OutputCount, math.MaxInt32)),
	}
}

// floorStatus is the status the floor writes: what the operator writes
// for a new HttpBackend without probe.lockCheck whose probe succeeded.
type floorStatus struct {
	Conditions         []metav1.Condition                `json:"conditions"`
	Locked             string                            `json:"locked"`
	ObservedGeneration int64                             `json:"observedGeneration"`
	Rendered           *backendsv1alpha1.RenderedObjects `json:"rendered"`
	State              *backendsv1alpha1.StateSummary    `json:"state"`
}

// floorStatusPatch returns the floor's JSON merge patch of b's status, the
// operator's for a new backend whose lock it does not check: Locked
// Unknown (LockNotChecked) and status.locked Unchecked, StateReachable
// True from the probe (state), Ready True, all at b's generation, and
// status.rendered with the rendered objects' names and the runners that
// read them.
func floorStatusPatch(b *backendsv1alpha1.HttpBackend, rendered backendsv1alpha1.RenderedObjects, state *backendsv1alpha1.StateSummary, now metav1.Time) ([]byte, error) {
	gen := b.Generation
	reachable := "The backend answers; it holds no state yet"
	if state.Present {
		reachable = fmt.Sprintf("The backend answers; state serial %d, lineage %s", state.Serial, state.Lineage)
	}
	status := floorStatus{
		Conditions: []metav1.Condition{
			{
				Type: backendsv1alpha1.LockedCondition, Status: metav1.ConditionUnknown, Reason: backendsv1alpha1.LockNotCheckedReason,
				Message: floorLockMessage, ObservedGeneration: gen, LastTransitionTime: now,
			},
			{
				Type: backendsv1alpha1.StateReachableCondition, Status: metav1.ConditionTrue, Reason: backendsv1alpha1.ReachableReason,
				Message: reachable, ObservedGeneration: gen, LastTransitionTime: now,
			},
			{
				Type: backendsv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: backendsv1alpha1.SucceededReason,
				Message: "Rendered ConfigMap " + rendered.ConfigMapName + " and Secret " + rendered.SecretName, ObservedGeneration: gen, LastTransitionTime: now,
			},
		},
		Locked:             "Unchecked",
		ObservedGeneration: gen,
		Rendered:           &rendered,
		State:              state,
	}
	patch, err := json.Marshal(map[string]floorStatus{"status": status})
	if err != nil {
		return nil, fmt.Errorf("encoding the status patch: %w", err)
	}
	return patch, nil
}
