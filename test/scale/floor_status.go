package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// floorLockMessage is the operator's Locked message for a backend whose
// lock it does not check (no probe.lockCheck) and that no StateLock holds
// (controllers/backend_statelocks.go and controllers/httpbackend.go). The
// floor writes the same bytes, so that its status patches cost the API
// server what the operator's do.
const floorLockMessage = "The lock is not checked, and no StateLock holds it: " +
	"spec.probe.lockCheck is off, and the REST protocol shows a lock's holder only to a lock attempt. " +
	"Set probe.lockCheck to true (with lockAddress and unlockAddress) to see every holder."

// floorProbe reads a backend's state as the operator's probe does (one GET
// of the address, with its username and password) and returns
// status.state for it. It shares one HTTP client, with keep-alive, across
// every backend.
func floorProbe(ctx context.Context, hc *http.Client, b *backendsv1alpha1.HttpBackend, password []byte) (*backendsv1alpha1.StateSummary, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.Spec.Address, http.NoBody)
	if err != nil {
		return nil, fmt.Errorf("building the probe of %s/%s: %w", b.Namespace, b.Name, err)
	}
	req.SetBasicAuth(b.Spec.Username, string(password))
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("probing %s/%s: %w", b.Namespace, b.Name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the state of %s/%s: %w", b.Namespace, b.Name, err)
	}
	return floorState(resp.StatusCode, body)
}

// floorState is status.state for a GET's answer, as the protocol reads it:
// 404, 204 or an empty 200 is no state; a 200 with a body is a state.
func floorState(code int, body []byte) (*backendsv1alpha1.StateSummary, error) {
	switch {
	case code == http.StatusNotFound || code == http.StatusNoContent || (code == http.StatusOK && len(body) == 0):
		return &backendsv1alpha1.StateSummary{Present: false}, nil
	case code != http.StatusOK:
		return nil, fmt.Errorf("the state server answered %d", code)
	}
	summary, err := statefile.ReadSummary(bytes.NewReader(body), nil)
	if err != nil {
		return nil, fmt.Errorf("reading the state: %w", err)
	}
	return &backendsv1alpha1.StateSummary{
		Present: true, Serial: int64(min(summary.Serial, math.MaxInt64)), Lineage: summary.Lineage, TerraformVersion: summary.TerraformVersion,
		SizeBytes: int64(len(body)), OutputCount: int32(min(summary.OutputCount, math.MaxInt32)),
	}, nil
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
