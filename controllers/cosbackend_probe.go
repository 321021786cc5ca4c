package controllers

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// defaultWorkspace is the workspace a backend's probe reads.
const defaultWorkspace = "default"

// cosProbeCondition is the condition Ready follows for a CosBackend: ""
// when probing is disabled.
func cosProbeCondition(b *backendsv1alpha1.CosBackend) string {
	if probeInterval(b.Spec.Probe) == 0 {
		return ""
	}
	return backendsv1alpha1.BucketReadyCondition
}

// reconcileProbe checks the bucket as Terraform does, then reads the state
// object and the .tflock object of the default workspace, when a probe is
// due. It sets BucketReady, Locked, status.state and status.lock, and
// scope.requeueAfter.
func (r *CosBackendReconciler) reconcileProbe(ctx context.Context, s *cosScope) error {
	backend := s.backend
	conds := &backend.Status.Conditions
	interval := probeInterval(backend.Spec.Probe)
	if interval == 0 {
		setCondition(conds, backend.Generation, backendsv1alpha1.BucketReadyCondition, observation{
			status: metav1.ConditionUnknown, reason: backendsv1alpha1.ProbeDisabledReason,
			message: "Probing is disabled: probe.interval is 0s",
		})
		meta.RemoveStatusCondition(conds, backendsv1alpha1.LockedCondition)
		backend.Status.State, backend.Status.Lock = nil, nil
		return nil
	}

	key := client.ObjectKeyFromObject(backend)
	inputs := fingerprint([]byte(backend.UID), []byte(strconv.FormatInt(backend.Generation, 10)), []byte(s.region),
		s.secrets.SecretID, s.secrets.SecretKey, s.secrets.SecurityToken)
	now := r.opts.clock.Now()
	if due, wait := r.schedule.due(key, inputs, now); !due {
		s.requeueAfter = wait
		return nil
	}

	cc, err := r.opts.cosClients(cosConfig(backend.Spec, s.region, s.secrets))
	if err != nil {
		return stall(backendsv1alpha1.InvalidSpecReason, "Cannot build a COS client: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	r.probeBucket(ctx, backend, cc)
	s.requeueAfter = r.schedule.probed(key, inputs, now, interval)
	return nil
}

// probeBucket checks the bucket, then the state and the lock.
func (r *CosBackendReconciler) probeBucket(ctx context.Context, backend *backendsv1alpha1.CosBackend, cc *cos.Client) {
	conds := &backend.Status.Conditions
	gen := backend.Generation
	start := time.Now()
	err := cc.CheckBucket(ctx)
	bucket := bucketObservation(backend.Spec.Bucket, err)
	probeDuration.WithLabelValues(cosBackendKind, bucket.reason).Observe(time.Since(start).Seconds())
	if err != nil {
		setCondition(conds, gen, backendsv1alpha1.BucketReadyCondition, bucket)
		meta.SetStatusCondition(conds, unknownLock(gen, "The bucket cannot be read"))
		return
	}

	object, err := cc.ReadState(ctx, defaultWorkspace)
	state, stateErr := cosStateSummary(object, err)
	if stateErr != nil {
		bucket = observation{status: metav1.ConditionFalse, reason: backendsv1alpha1.StateUnreadableReason,
			message: fmt.Sprintf("The bucket exists, but its state object cannot be used: %v", stateErr)}
	} else {
		backend.Status.State = state
		stateSize.WithLabelValues(cosBackendKind, backend.Namespace, backend.Name).Set(float64(state.SizeBytes))
	}
	setCondition(conds, gen, backendsv1alpha1.BucketReadyCondition, bucket)

	lock, err := cc.ReadLock(ctx, defaultWorkspace)
	if err != nil {
		meta.SetStatusCondition(conds, unknownLock(gen, "Reading the lock object failed: "+err.Error()))
		return
	}
	if lock == nil {
		backend.Status.Lock = nil
		lockHeld.WithLabelValues(cosBackendKind, backend.Namespace, backend.Name).Set(0)
		setCondition(conds, gen, backendsv1alpha1.LockedCondition, observation{
			status: metav1.ConditionFalse, reason: backendsv1alpha1.NotLockedReason, message: "The state is not locked.",
		})
		return
	}
	holder := lockInfo(lock)
	backend.Status.Lock = holder
	lockHeld.WithLabelValues(cosBackendKind, backend.Namespace, backend.Name).Set(1)
	setCondition(conds, gen, backendsv1alpha1.LockedCondition, observation{
		status: metav1.ConditionTrue, reason: backendsv1alpha1.LockHeldReason, message: describeHolder(holder),
	})
}

// unknownLock is the Locked condition when the lock cannot be read.
func unknownLock(generation int64, message string) metav1.Condition {
	return metav1.Condition{
		Type: backendsv1alpha1.LockedCondition, Status: metav1.ConditionUnknown,
		Reason: backendsv1alpha1.UnreachableReason, Message: truncate(message), ObservedGeneration: generation,
	}
}

// cosStateSummary is status.state for a state object read.
func cosStateSummary(object *cos.Object, err error) (*backendsv1alpha1.StateSummary, error) {
	if err != nil {
		return nil, err
	}
	if object == nil {
		return &backendsv1alpha1.StateSummary{Present: false}, nil
	}
	summary, err := statefile.ReadSummary(bytes.NewReader(object.Data))
	if err != nil {
		return nil, fmt.Errorf("parsing the state: %w", err)
	}
	return stateStatus(summary, int64(len(object.Data))), nil
}
