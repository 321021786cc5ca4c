package controllers

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// defaultWorkspace is the workspace a backend's probe reads.
const defaultWorkspace = "default"

// cosProbeCondition is the condition Ready follows for a CosBackend: ""
// when probing is disabled or impossible (assumeRoleOnly).
func cosProbeCondition(b *backendsv1alpha1.CosBackend) string {
	if probeInterval(b.Spec.Probe) == 0 || assumeRoleOnly(b) {
		return ""
	}
	return backendsv1alpha1.BucketReadyCondition
}

// assumeRoleOnly reports a CosBackend whose only credentials are a role to
// assume: runners assume it with keys of their own environment, and the
// controller, which makes no STS call, has nothing to read the bucket
// with.
func assumeRoleOnly(b *backendsv1alpha1.CosBackend) bool {
	return b.Spec.CredentialsSecretRef == nil && b.Spec.AssumeRole != nil
}

// reconcileProbe checks the bucket as Terraform does, then reads the state
// object and the .tflock object of the default workspace. The reads run off
// the reconcile path (see prober): a due probe is submitted, and the
// reconcile that its end triggers applies what it learned to BucketReady,
// Locked, status.state and status.lock. It sets scope.requeueAfter and
// scope.probePending.
func (r *CosBackendReconciler) reconcileProbe(ctx context.Context, s *cosScope) error {
	backend := s.backend
	conds := &backend.Status.Conditions
	interval := probeInterval(backend.Spec.Probe)
	if interval == 0 || assumeRoleOnly(backend) {
		obs := observation{status: metav1.ConditionUnknown, reason: backendsv1alpha1.ProbeDisabledReason,
			message: "Probing is disabled: probe.interval is 0s"}
		if interval > 0 {
			obs.reason = backendsv1alpha1.AssumeRoleNotSupportedReason
			obs.message = "The bucket is not checked: the only credentials are spec.assumeRole, and the operator does not assume roles " +
				"(it makes no STS call). Runners assume it with keys of their own environment. Set credentialsSecretRef to keys " +
				"that may read the bucket to have it checked."
		}
		setCondition(conds, backend.Generation, backendsv1alpha1.BucketReadyCondition, obs)
		clearLock(backend, &backend.Status.Lock, cosBackendKind)
		backend.Status.State = nil
		r.probes.forget(probeKey{kind: cosBackendKind, NamespacedName: client.ObjectKeyFromObject(backend)})
		return nil
	}

	inputs := fingerprint([]byte(backend.UID), []byte(strconv.FormatInt(backend.Generation, 10)), []byte(s.region),
		s.secrets.SecretID, s.secrets.SecretKey, s.secrets.SecurityToken)
	task := probeTask{kind: cosBackendKind, obj: backend, inputs: inputs, interval: interval,
		condition: backendsv1alpha1.BucketReadyCondition}
	step := r.probeStep(ctx, task)
	s.requeueAfter, s.probePending, s.applied = step.requeueAfter, step.pending, step.ack
	if step.result != nil {
		applyCosProbe(backend, step.result.value.(cosProbeResult), step.result.finished)
		return nil
	}
	if !step.submit {
		return nil
	}
	cc, err := r.opts.cosClients(cosConfig(backend.Spec, s.region, s.secrets))
	if err != nil {
		return stall(backendsv1alpha1.InvalidSpecReason, "Cannot build a COS client: %v", err)
	}
	forceUnlock := forceUnlockID(backend.Spec.ForceUnlock)
	r.submitProbe(task, func(ctx context.Context) any { return runCosProbe(ctx, cc, forceUnlock) })
	s.probePending = true
	return nil
}

// cosProbeResult is what one probe of a CosBackend learned.
type cosProbeResult struct {
	// bucketErr is the bucket check's error; nothing else was read when it
	// is set.
	bucketErr error
	// state is the state object's summary (Present false when there is
	// none); stateErr is set when the object cannot be used.
	state    *backendsv1alpha1.StateSummary
	stateErr error
	// lock is what the .tflock object says of the lock.
	lock lockReading
}

// runCosProbe checks the bucket, then streams the state object into a
// summary and reads the lock object, within probeTimeout; when the lock's
// ID is the one forceUnlock names, it releases it. Memory does not depend
// on the size of the state.
func runCosProbe(ctx context.Context, cc *cos.Client, forceUnlock string) cosProbeResult {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	start := time.Now()
	var res cosProbeResult
	res.bucketErr = cc.CheckBucket(ctx)
	probeDuration.WithLabelValues(cosBackendKind, bucketObservation("", res.bucketErr).reason).Observe(time.Since(start).Seconds())
	if res.bucketErr != nil {
		return res
	}
	res.state, res.stateErr = streamCosSummary(ctx, cc, defaultWorkspace)
	res.lock = readCosLock(ctx, cc, defaultWorkspace)
	if forceUnlock != "" && res.lock.holder != nil && res.lock.holder.ID == forceUnlock {
		res.lock.releaseErr = cc.ReleaseLock(ctx, defaultWorkspace, forceUnlock)
		res.lock.released = res.lock.releaseErr == nil
	}
	return res
}

// readCosLock reads the holder of a workspace's lock from its .tflock
// object.
func readCosLock(ctx context.Context, cc *cos.Client, workspace string) lockReading {
	holder, err := cc.ReadLock(ctx, workspace)
	if err != nil {
		return lockReading{err: err}
	}
	return lockReading{held: holder != nil, holder: lockInfo(holder)}
}

// streamCosSummary streams a workspace's state object into status.state.
// The summary is trusted only once the object's checksum matched, which
// StreamState checks at its end.
func streamCosSummary(ctx context.Context, cc *cos.Client, workspace string) (*backendsv1alpha1.StateSummary, error) {
	var summary statefile.Summary
	found, size, err := cc.StreamState(ctx, workspace, func(r io.Reader) error {
		var err error
		summary, err = statefile.ReadSummary(r)
		return err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading the state: %w", err)
	case !found:
		return &backendsv1alpha1.StateSummary{Present: false}, nil
	}
	return stateStatus(summary, size), nil
}

// applyCosProbe writes what a probe that ended at finished learned into
// the backend's status.
func applyCosProbe(backend *backendsv1alpha1.CosBackend, res cosProbeResult, finished time.Time) {
	conds := &backend.Status.Conditions
	gen := backend.Generation
	bucket := bucketObservation(backend.Spec.Bucket, res.bucketErr)
	if res.bucketErr != nil {
		setCondition(conds, gen, backendsv1alpha1.BucketReadyCondition, bucket)
		applyLock(backend, &backend.Status.Lock, cosBackendKind, lockStatus(lockReading{err: res.bucketErr}, forceUnlockID(backend.Spec.ForceUnlock)))
		return
	}
	if res.stateErr != nil {
		bucket = observation{status: metav1.ConditionFalse, reason: backendsv1alpha1.StateUnreadableReason,
			message: fmt.Sprintf("The bucket exists, but its state object cannot be used: %v", res.stateErr)}
	} else {
		backend.Status.State = res.state
		stateSize.WithLabelValues(cosBackendKind, backend.Namespace, backend.Name).Set(float64(res.state.SizeBytes))
	}
	setCondition(conds, gen, backendsv1alpha1.BucketReadyCondition, bucket)
	if res.lock.released {
		backend.Status.LastForceUnlock = &backendsv1alpha1.ForceUnlockStatus{LockID: res.lock.holder.ID, Time: metav1.NewTime(finished)}
	}
	applyLock(backend, &backend.Status.Lock, cosBackendKind, lockStatus(res.lock, forceUnlockID(backend.Spec.ForceUnlock)))
}
