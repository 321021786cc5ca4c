package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/outputs"
	"github.com/infrastate/backend-operator/internal/statefile"
)

const remoteStateKind = "RemoteState"

// reconcileBackend reads the backend the RemoteState names and its
// credentials, and prepares scope.read to fetch the workspace's state with
// the backend's own client and settings. A missing backend is a stall with
// reason BackendNotFound, a backend whose references are broken one with
// BackendNotReady; the watches on backends and Secrets bring the object
// back when they change.
func (r *RemoteStateReconciler) reconcileBackend(ctx context.Context, s *remoteScope) error {
	ref := s.remote.Spec.BackendRef
	key := types.NamespacedName{Namespace: s.remote.Namespace, Name: ref.Name}
	base := [][]byte{[]byte(s.remote.UID), []byte(strconv.FormatInt(s.remote.Generation, 10))}

	switch ref.Kind {
	case httpBackendKind:
		backend := &backendsv1alpha1.HttpBackend{}
		if err := r.getBackend(ctx, key, backend, ref.Kind); err != nil {
			return err
		}
		secrets, err := resolveHTTPSecrets(ctx, r.apiReader, backend)
		if err != nil {
			return backendNotReady(ref, err)
		}
		cfg := stateClientConfig(backend.Spec, secrets)
		log := ctrl.LoggerFrom(ctx).WithName("stateclient")
		s.read = func(ctx context.Context) ([]byte, error) {
			sc, err := r.opts.stateClients(cfg, log)
			if err != nil {
				return nil, stall(backendsv1alpha1.BackendNotReadyReason, "HttpBackend %s cannot be used: %v", ref.Name, err)
			}
			payload, err := sc.Fetch(ctx)
			if err != nil || payload == nil {
				return nil, err
			}
			return payload.Data, nil
		}
		s.inputs = fingerprint(append(base, []byte(backend.UID), []byte(strconv.FormatInt(backend.Generation, 10)),
			secrets.Password, secrets.ClientCertificatePEM, secrets.ClientPrivateKeyPEM, secrets.ClientCACertificatePEM)...)

	case cosBackendKind:
		backend := &backendsv1alpha1.CosBackend{}
		if err := r.getBackend(ctx, key, backend, ref.Kind); err != nil {
			return err
		}
		region, err := effectiveRegion(backend.Spec, r.opts.cosDefaultRegion)
		if err != nil {
			return backendNotReady(ref, err)
		}
		secrets, err := resolveCosSecrets(ctx, r.apiReader, backend)
		if err != nil {
			return backendNotReady(ref, err)
		}
		cfg := cosConfig(backend.Spec, region, secrets)
		workspace := s.remote.Spec.Workspace
		s.read = func(ctx context.Context) ([]byte, error) {
			cc, err := r.opts.cosClients(cfg)
			if err != nil {
				return nil, stall(backendsv1alpha1.BackendNotReadyReason, "CosBackend %s cannot be used: %v", ref.Name, err)
			}
			object, err := cc.ReadState(ctx, workspaceOrDefault(workspace))
			if err != nil || object == nil {
				return nil, err
			}
			return object.Data, nil
		}
		s.inputs = fingerprint(append(base, []byte(backend.UID), []byte(strconv.FormatInt(backend.Generation, 10)),
			[]byte(region), secrets.SecretID, secrets.SecretKey, secrets.SecurityToken)...)

	default:
		return stall(backendsv1alpha1.InvalidSpecReason, "spec.backendRef.kind %q is neither HttpBackend nor CosBackend", ref.Kind)
	}
	return nil
}

// getBackend reads the backend; a missing one is a BackendNotFound stall.
func (r *RemoteStateReconciler) getBackend(ctx context.Context, key types.NamespacedName, obj client.Object, kind string) error {
	err := r.client.Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err):
		return stall(backendsv1alpha1.BackendNotFoundReason, "%s %s does not exist in namespace %s", kind, key.Name, key.Namespace)
	case err != nil:
		return fmt.Errorf("reading %s %s: %w", kind, key, err)
	}
	return nil
}

// backendNotReady wraps a backend's stall as the RemoteState's own.
func backendNotReady(ref backendsv1alpha1.BackendReference, err error) error {
	if se, ok := asStall(err); ok {
		return stall(backendsv1alpha1.BackendNotReadyReason, "%s %s cannot be used: %s (%s)", ref.Kind, ref.Name, se.message, se.reason)
	}
	return err
}

// reconcileOutputs reads the state when a read is due and publishes the
// selected outputs: plain ones to the ConfigMap, sensitive ones only to the
// Secret, each written only when a value changed. A failed read, a missing
// state or a missing or mistyped output sets OutputsReady=False and keeps
// the last published values. It sets status.outputs, status.state,
// status.rendered and scope.requeueAfter.
func (r *RemoteStateReconciler) reconcileOutputs(ctx context.Context, s *remoteScope) error {
	remote := s.remote
	key := types.NamespacedName{Namespace: remote.Namespace, Name: remote.Name}
	interval := defaultProbeInterval
	if remote.Spec.Interval != nil {
		interval = remote.Spec.Interval.Duration
	}
	now := r.opts.clock.Now()
	if due, wait := r.schedule.due(key, s.inputs, now); !due {
		s.requeueAfter = wait
		return nil
	}
	readCtx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()

	obs, err := r.publish(readCtx, s)
	if err != nil {
		return err
	}
	setCondition(&remote.Status.Conditions, remote.Generation, backendsv1alpha1.OutputsReadyCondition, obs)
	s.requeueAfter = r.schedule.probed(key, s.inputs, now, interval)
	return nil
}

// publish reads, selects and writes the outputs, and returns the
// OutputsReady observation. Only errors writing to the API server, and
// stalls, are returned as errors.
func (r *RemoteStateReconciler) publish(ctx context.Context, s *remoteScope) (observation, error) {
	remote := s.remote
	data, err := s.read(ctx)
	if _, isStall := asStall(err); isStall {
		return observation{}, err
	}
	if err != nil {
		return readFailure(err), nil
	}
	if data == nil {
		return observation{status: metav1.ConditionFalse, reason: backendsv1alpha1.StateNotFoundReason,
			message: fmt.Sprintf("%s %s holds no state for workspace %s", remote.Spec.BackendRef.Kind,
				remote.Spec.BackendRef.Name, workspaceOrDefault(remote.Spec.Workspace))}, nil
	}
	state, err := statefile.Parse(data)
	if err != nil {
		return observation{status: metav1.ConditionFalse, reason: backendsv1alpha1.StateUnreadableReason,
			message: fmt.Sprintf("The state cannot be parsed: %v", err)}, nil
	}
	values, err := outputs.Select(state, defaultsOf(remote.Spec.Defaults), selectorsOf(remote.Spec.Outputs))
	if err != nil {
		return selectFailure(err), nil
	}

	plain, sensitive := outputs.Split(values)
	owner := ownerOf(remote, remoteStateKind)
	target := remote.Spec.Target
	cmName, secretName := target.ConfigMapName, target.SecretName
	if cmName == "" {
		cmName = outputs.DefaultTargetName(remote.Name)
	}
	if secretName == "" {
		secretName = outputs.DefaultTargetName(remote.Name)
	}
	w := ownedWriter{client: r.client, reader: r.apiReader}
	if _, err := w.applySecret(ctx, outputs.Secret(owner, secretName, sensitive)); err != nil {
		return observation{}, err
	}
	if _, err := w.applyConfigMap(ctx, outputs.ConfigMap(owner, cmName, plain)); err != nil {
		return observation{}, err
	}

	remote.Status.Rendered = &backendsv1alpha1.RenderedObjects{ConfigMapName: cmName, SecretName: secretName}
	remote.Status.Outputs = outputStatuses(values)
	remote.Status.State = stateStatus(state.Summary(), int64(len(data)))
	return observation{status: metav1.ConditionTrue, reason: backendsv1alpha1.OutputsPublishedReason,
		message: fmt.Sprintf("Published %d outputs (%d sensitive) from state serial %d to ConfigMap %s and Secret %s",
			len(values), len(sensitive), state.Serial, cmName, secretName)}, nil
}

// readFailure classifies an error reading the state.
func readFailure(err error) observation {
	switch {
	case errors.Is(err, cos.ErrBucketNotFound):
		return observation{status: metav1.ConditionFalse, reason: backendsv1alpha1.BucketNotFoundReason, message: err.Error()}
	case errors.Is(err, cos.ErrAccessDenied):
		return observation{status: metav1.ConditionFalse, reason: backendsv1alpha1.AccessDeniedReason, message: err.Error()}
	case errors.Is(err, cos.ErrUnreachable):
		return observation{status: metav1.ConditionUnknown, reason: backendsv1alpha1.UnreachableReason, message: err.Error()}
	case errors.Is(err, cos.ErrChecksumMismatch), errors.Is(err, cos.ErrChecksumMissing), errors.Is(err, cos.ErrStateTooLarge):
		return observation{status: metav1.ConditionFalse, reason: backendsv1alpha1.StateUnreadableReason, message: err.Error()}
	}
	return probeFailure(err)
}

// selectFailure is the OutputsReady observation of a selection error.
func selectFailure(err error) observation {
	obs := observation{status: metav1.ConditionFalse, reason: backendsv1alpha1.InvalidSpecReason, message: err.Error()}
	var missing *outputs.MissingError
	var mismatch *outputs.TypeMismatchError
	switch {
	case errors.As(err, &missing):
		obs.reason = backendsv1alpha1.OutputMissingReason
	case errors.As(err, &mismatch):
		obs.reason = backendsv1alpha1.OutputTypeMismatchReason
	}
	return obs
}

// outputStatuses is status.outputs: names, keys, types, sensitivity.
func outputStatuses(values []outputs.Value) []backendsv1alpha1.OutputStatus {
	out := make([]backendsv1alpha1.OutputStatus, 0, len(values))
	for _, v := range values {
		out = append(out, backendsv1alpha1.OutputStatus{Name: v.Name, Key: v.Key, Type: clip(v.Type, 1024), Sensitive: v.Sensitive})
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

// workspaceOrDefault is the workspace to read.
func workspaceOrDefault(w string) string {
	if w == "" {
		return defaultWorkspace
	}
	return w
}
