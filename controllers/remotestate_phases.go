package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
	"github.com/infrastate/backend-operator/internal/outputs"
	"github.com/infrastate/backend-operator/internal/stateencryption"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// reconcileSpec refuses, as a stall, a spec the admission rules would
// refuse today but that was stored before they existed.
func (r *remoteStateReconciler) reconcileSpec(_ context.Context, s *remoteScope) error {
	return checkRemoteStateSpec(s.remote.Spec)
}

// reconcileBackend reads the backend the RemoteState names and its
// references through its kind, and prepares scope.newStream to build,
// when a read is due, the reader of the workspace's state with the
// backend's own client and settings. A missing backend is a stall with
// reason BackendNotFound, a backend whose references are broken one with
// BackendNotReady; the watches on backends and Secrets bring the object
// back when they change.
//
// A backend of another namespace, which reconcileGrant found granted, is
// read there as its own reconciler reads it (its references under the
// reference policy, its passphrases), and its state through the
// RemoteState's own shares and circuits: the consumer pays for its reads.
// Its problems are its owners' to see: the RemoteState says which, not
// what its Secrets hold or lack.
func (r *remoteStateReconciler) reconcileBackend(ctx context.Context, s *remoteScope) error {
	ref := s.remote.Spec.BackendRef.BackendReference
	namespace, producer := s.remote.Namespace, producerOf(s.remote)
	if producer != "" {
		namespace = producer
	}
	kind, backend, resolved, err := r.resolveBackendFor(ctx, namespace, s.remote.Namespace, ref)
	if se, ok := conditions.AsStall(err); ok && se.Reason == backendsv1alpha1.BackendNotFoundReason {
		cm, secret := remoteStateTargets(s.remote)
		missing := se.Message
		if producer != "" {
			missing = fmt.Sprintf("%s %s does not exist in namespace %s, whose OutputGrants grant it to namespace %s", ref.Kind, ref.Name, producer, s.remote.Namespace)
		}
		return conditions.Stall(se.Reason, "%s. The outputs published last stay in ConfigMap %s and Secret %s: create the backend again, "+
			"or point spec.backendRef at one that exists", missing, cm, secret)
	}
	if err != nil {
		return err
	}
	s.newStream = stateOpener(resolved, workspaceOrDefault(s.remote.Spec.Workspace), ref)
	s.decrypter = resolved.decrypter()
	s.failures = kind.failures()
	parts := append(identity(s.remote), identity(backend)...)
	parts = append(parts, resolved.inputs()...)
	s.inputs = fingerprint(append(parts, grantInputs(s.grant)...)...)
	return nil
}

// reconcileOutputs reads the state when a read is due and publishes the
// selected outputs: plain ones to the ConfigMap, sensitive ones only to the
// Secret, each written only when a value changed. The read runs off the
// reconcile path (see prober), streaming, and keeps only the selected
// outputs: outputs that cannot fit a ConfigMap or a Secret are refused
// (OutputsTooLarge) before they are built. A failed read, a missing state,
// a missing or mistyped output, or outputs beyond the namespace's API
// storage share (BudgetExceeded) sets OutputsReady=False and keeps the
// last published values. It sets status.outputs, status.state,
// status.rendered, scope.requeueAfter and scope.probePending, and records
// a publication in infrastate_remotestate_last_success_timestamp_seconds.
func (r *remoteStateReconciler) reconcileOutputs(ctx context.Context, s *remoteScope) error {
	remote := s.remote
	defaults := defaultsOf(remote.Spec.Defaults)
	if err := outputs.CheckDefaults(defaults); err != nil {
		return conditions.Stall(backendsv1alpha1.InvalidSpecReason, "%s", invalidDefaultMessage(err))
	}
	interval := remoteStateInterval(remote, r.opts.defaultProbeInterval)
	task := probeTask{kind: backendsv1alpha1.RemoteStateKind, obj: remote, inputs: s.inputs, interval: interval,
		condition: backendsv1alpha1.OutputsReadyCondition, reserve: remoteReadReservation}
	apply := func(res *probes.Result) error {
		obs, err := r.publish(ctx, remote, res.Value.(remoteRead), s.failures)
		if err != nil {
			// Not published: the result stays for the next attempt, which
			// the watch on the published objects or the fix of the spec
			// triggers, instead of waiting for the next read.
			return err
		}
		if s.grant != nil && obs.Status == metav1.ConditionTrue {
			obs.Message += "; " + grantedMessage(producerOf(remote), *s.grant)
		}
		conditions.Set(&remote.Status.Conditions, remote.Generation, backendsv1alpha1.OutputsReadyCondition, obs)
		if obs.Status == metav1.ConditionTrue {
			r.metrics.remoteStateRefresh.succeeded(client.ObjectKeyFromObject(remote), res.Finished)
		}
		return nil
	}
	start := func() (probes.Func, error) {
		stream, err := s.newStream()
		if err != nil {
			return nil, err
		}
		selectors, grant := selectorsOf(remote.Spec.Outputs), outputsGrant(s.grant)
		dec := s.decrypter
		return func(ctx context.Context) any { return readOutputs(ctx, stream, dec, defaults, selectors, grant) }, nil
	}
	step, err := r.advanceProbe(ctx, task, apply, start)
	s.requeueAfter, s.probePending, s.applied = step.requeueAfter, step.pending, step.ack
	return err
}

// remoteRead is what one read of a RemoteState's state learned.
type remoteRead struct {
	// found is false when the backend holds no state for the workspace.
	found bool
	// err is set when the state could not be read: the backend's answer,
	// a checksum, the size limit.
	err error
	// contentErr is set when the state was read but its content cannot be
	// published: it does not parse, an output is missing or mistyped, or
	// the outputs do not fit.
	contentErr error
	// summary and values are what the state read says of itself and
	// the outputs to publish: the outputs' raw JSON, which the state
	// held too, is not kept while the result waits to be published.
	summary statefile.Summary
	size    int64
	values  []outputs.Value
}

// valueOverhead approximates what an outputs.Value costs beside its
// bytes: the slice element and the headers of its strings.
const valueOverhead = 96

// HeldBytes is what the read holds while it waits to be published: the
// outputs it keeps (see probes.Sizer).
func (r remoteRead) HeldBytes() int64 {
	n := int64(len(r.summary.Lineage) + len(r.summary.TerraformVersion))
	for _, v := range r.values {
		n += int64(len(v.Name)+len(v.Key)+len(v.Type)+len(v.Data)) + valueOverhead
	}
	return n
}

// readOutputs streams the state through outputs.ReadGranted, within
// probeTimeout, decrypting an encrypted one with dec, and keeping only
// what grant allows (everything when nil).
func readOutputs(ctx context.Context, stream stateStreamer, dec stateDecrypter, defaults map[string]json.RawMessage, selectors []outputs.Selector, grant *outputs.Grant) remoteRead {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var res remoteRead
	found, size, err := stream(ctx, func(r io.Reader) error {
		var state *statefile.State
		state, res.values, res.contentErr = outputs.ReadGranted(r, dec.forRead(ctx), defaults, selectors, grant)
		if state != nil {
			res.summary = state.Summary()
		}
		return res.contentErr
	})
	res.found, res.size = found, size
	if err != nil && (res.contentErr == nil || !errors.Is(err, res.contentErr)) {
		res.err, res.contentErr = err, nil
	}
	res.err, res.contentErr = dec.explain(res.err), dec.explain(res.contentErr)
	return res
}

// publish writes a read's outputs and returns the OutputsReady
// observation. Only errors writing to the API server, and stalls, are
// returned as errors; outputs the namespace's API storage share cannot
// hold are an observation (BudgetExceeded), written nowhere, like a read
// that failed: the read is done with, and the next one publishes again.
func (r *remoteStateReconciler) publish(ctx context.Context, remote *backendsv1alpha1.RemoteState, read remoteRead, failures []failureClass) (conditions.Observation, error) {
	producer := producerOf(remote)
	switch {
	case read.err != nil:
		return failureElsewhere(probeFailure(failures, read.err), producer, remote.Spec.BackendRef.BackendReference), nil //nolint:nilerr // a failed read is reported in OutputsReady, not retried as an error
	case read.contentErr != nil:
		return failureElsewhere(contentFailure(read.contentErr), producer, remote.Spec.BackendRef.BackendReference), nil //nolint:nilerr // a state that does not parse is reported in OutputsReady, not retried as an error
	case !read.found:
		return noState(remote.Spec.BackendRef.BackendReference, workspaceOrDefault(remote.Spec.Workspace)), nil
	}

	plain, sensitive := outputs.Split(read.values)
	owner := ownerOf(remote, backendsv1alpha1.RemoteStateKind)
	cmName, secretName := remoteStateTargets(remote)
	w := r.rewriter(remote.Status.Rendered != nil)
	secret, cm := outputs.Secret(owner, secretName, sensitive), outputs.ConfigMap(owner, cmName, plain)
	if err := w.Fit(ctx, secret, cm); err != nil {
		return budgetRefusal(err)
	}
	if _, err := w.ApplySecret(ctx, secret); err != nil {
		return budgetRefusal(err)
	}
	if _, err := w.ApplyConfigMap(ctx, cm); err != nil {
		return budgetRefusal(err)
	}
	if err := w.DeletePrevious(ctx, owner, remote.Status.Rendered, cmName, secretName); err != nil {
		return conditions.Observation{}, err
	}

	remote.Status.Rendered = &backendsv1alpha1.RenderedObjects{ConfigMapName: cmName, SecretName: secretName}
	remote.Status.Outputs = outputStatuses(read.values)
	remote.Status.State = stateStatus(read.summary, read.size)
	if producerOf(remote) != "" {
		remote.Status.State = grantedState(remote.Status.State)
	}
	msg := fmt.Sprintf("Published %d outputs (%d sensitive) from state serial %d to ConfigMap %s and Secret %s",
		len(read.values), len(sensitive), read.summary.Serial, cmName, secretName)
	if len(read.values) > maxOutputStatuses {
		msg += fmt.Sprintf("; status.outputs lists the first %d", maxOutputStatuses)
	}
	return conditions.Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.OutputsPublishedReason, Message: msg}, nil
}

// budgetRefusal is publish's answer to err, an error writing the outputs:
// the observation of a refusal by the API storage budget, err otherwise.
func budgetRefusal(err error) (conditions.Observation, error) {
	if obs, ok := budgetObservation(err); ok {
		return obs, nil
	}
	return conditions.Observation{}, err
}

// noState is the OutputsReady observation of a workspace that holds no
// state: terraform_remote_state fails the same way.
func noState(ref backendsv1alpha1.BackendReference, workspace string) conditions.Observation {
	return conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.StateNotFoundReason,
		Message: fmt.Sprintf("%s %s holds no state for workspace %s: apply the stack that writes it first, or check spec.workspace",
			ref.Kind, ref.Name, workspace)}
}

// remoteStateTargets are the names of the ConfigMap and the Secret a
// RemoteState publishes to.
func remoteStateTargets(remote *backendsv1alpha1.RemoteState) (configMapName, secretName string) {
	configMapName, secretName = remote.Spec.Target.ConfigMapName, remote.Spec.Target.SecretName
	if configMapName == "" {
		configMapName = outputs.DefaultTargetName(remote.Name)
	}
	if secretName == "" {
		secretName = outputs.DefaultTargetName(remote.Name)
	}
	return configMapName, secretName
}

// contentFailure is the OutputsReady observation of a state that was read
// but cannot be published; its message ends with what to do.
func contentFailure(err error) conditions.Observation {
	obs := conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.StateUnreadableReason}
	var (
		missing    *outputs.MissingError
		mismatch   *outputs.TypeMismatchError
		key        *outputs.KeyError
		notGranted *outputs.NotGrantedError
	)
	switch {
	case errors.As(err, &notGranted):
		obs.Reason = backendsv1alpha1.ReferenceNotGrantedReason
		obs.Message = fmt.Sprintf("Outputs %s, which spec.outputs selects, are sensitive, and no OutputGrant of the backend's namespace "+
			"names them in sensitiveOutputs: ask its owners to add them there, or leave them out of spec.outputs", strings.Join(notGranted.Names, ", "))
	case errors.Is(err, outputs.ErrTooLarge):
		obs.Reason = backendsv1alpha1.OutputsTooLargeReason
		obs.Message = "The outputs cannot be published: " + err.Error() + "; select the outputs you need with spec.outputs"
	case errors.As(err, &missing):
		obs.Reason = backendsv1alpha1.OutputMissingReason
		obs.Message = fmt.Sprintf("Output %q is not in the state and spec.defaults has no value for it: "+
			"add it to the outputs of the stack that writes the state and apply it, set spec.defaults, or leave it out of spec.outputs", missing.Name)
	case errors.As(err, &mismatch):
		obs.Reason = backendsv1alpha1.OutputTypeMismatchReason
		obs.Message = fmt.Sprintf("Output %q is a %s, not the %s spec.outputs asks for: "+
			"set its type in spec.outputs to the output's type (or to any), or change the output in the stack that writes the state",
			mismatch.Name, mismatch.Got, mismatch.Want)
	case errors.As(err, &key):
		obs.Reason = backendsv1alpha1.OutputKeyInvalidReason
		obs.Message = capitalize(err.Error()) + "; rename it with spec.outputs[].key or leave it out"
	case errors.Is(err, outputs.ErrInvalidDefault):
		obs.Reason = backendsv1alpha1.InvalidSpecReason
		obs.Message = invalidDefaultMessage(err)
	case errors.Is(err, statefile.ErrEncrypted):
		obs.Reason = backendsv1alpha1.StateEncryptedReason
		obs.Message = "The state is encrypted with OpenTofu's state encryption: set spec.encryption on the backend " +
			"to the passphrase its runners encrypt with"
	case errors.Is(err, stateencryption.ErrDerivationRefused):
		return probeFailure(nil, err) // BudgetExceeded, as a probe reports it
	case errors.Is(err, statefile.ErrDecrypt):
		obs.Reason = backendsv1alpha1.DecryptionFailedReason
		obs.Message = "The state is encrypted and spec.encryption of the backend cannot decrypt it: " + errorText(err) + ". " + decryptionNextStep(err)
	default:
		obs.Message = fmt.Sprintf("The state cannot be parsed: %s. %s", errorText(err), nextStepAs(nil, backendsv1alpha1.StateUnreadableReason, err))
	}
	return obs
}

// invalidDefaultMessage is the message of a default of spec.defaults that
// cannot be used (outputs.ErrInvalidDefault).
func invalidDefaultMessage(err error) string {
	return capitalize(err.Error()) + ": fix spec.defaults"
}

// maxOutputStatuses is the most outputs status.outputs lists, the API's
// bound: a ConfigMap holds many more.
const maxOutputStatuses = 512

// outputStatuses is status.outputs: names, keys, types, sensitivity of the
// first maxOutputStatuses outputs, clipped to the API's bounds.
func outputStatuses(values []outputs.Value) []backendsv1alpha1.OutputStatus {
	values = values[:min(len(values), maxOutputStatuses)]
	out := make([]backendsv1alpha1.OutputStatus, 0, len(values))
	for _, v := range values {
		out = append(out, backendsv1alpha1.OutputStatus{Name: conditions.Clip(v.Name, 128), Key: v.Key, Type: conditions.Clip(v.Type, 1024), Sensitive: v.Sensitive})
	}
	return out
}

// defaultsOf converts spec.defaults.
func defaultsOf(in map[string]apiextensionsv1.JSON) map[string]json.RawMessage {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(in))
	for k, v := range in {
		out[k] = v.Raw
	}
	return out
}

// selectorsOf converts spec.outputs.
func selectorsOf(in []backendsv1alpha1.OutputSelector) []outputs.Selector {
	out := make([]outputs.Selector, 0, len(in))
	for _, o := range in {
		out = append(out, outputs.Selector{Name: o.Name, Type: o.Type, Key: o.Key})
	}
	return out
}
