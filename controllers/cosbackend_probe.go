package controllers

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/utils/clock"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/render"
	"github.com/infrastate/backend-operator/internal/statefile"
)

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
// summary (decrypting an encrypted one with dec) and reads the lock object, within probeTimeout; when the lock's
// ID is the one forceUnlock names, or its holder's Pod holder (nil when
// lockPolicy does not release gone holders) finds gone, it releases it
// (see settleHeldLock). Memory does not depend on the size of a plain
// state; an encrypted one is held whole within dec's bounds.
func runCosProbe(ctx context.Context, m *operatorMetrics, clk clock.PassiveClock, cc *cos.Client, dec stateDecrypter, forceUnlock string, holder *holderCheck) cosProbeResult {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	start := clk.Now()
	var res cosProbeResult
	res.bucketErr = cc.CheckBucket(ctx)
	m.probeDuration.WithLabelValues(backendsv1alpha1.CosBackendKind, bucketObservation("", res.bucketErr).Reason).Observe(clk.Since(start).Seconds())
	if res.bucketErr != nil {
		return res
	}
	res.state, res.stateErr = streamCosSummary(ctx, cc, backendsv1alpha1.DefaultWorkspace, dec.forRead(ctx))
	res.stateErr = dec.explain(res.stateErr)
	res.lock = readCosLock(ctx, cc, backendsv1alpha1.DefaultWorkspace)
	settleHeldLock(ctx, &res.lock, forceUnlock, holder, func(ctx context.Context, id string, _ bool) error {
		return cc.ReleaseLock(ctx, backendsv1alpha1.DefaultWorkspace, id)
	})
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
func streamCosSummary(ctx context.Context, cc *cos.Client, workspace string, dec *statefile.Decryption) (*backendsv1alpha1.StateSummary, error) {
	var summary statefile.Summary
	found, size, err := cc.StreamState(ctx, workspace, func(r io.Reader) error {
		var err error
		summary, err = statefile.ReadSummary(r, dec)
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
// the backend's status: BucketReady and status.state from the bucket
// check and the state object, and the lock (see applyLock). When the
// bucket cannot be checked, neither can the lock.
func applyCosProbe(m *operatorMetrics, backend *backendsv1alpha1.CosBackend, res cosProbeResult, finished time.Time) {
	conds := &backend.Status.Conditions
	bucket := bucketObservation(backend.Spec.Bucket, res.bucketErr)
	switch {
	case res.bucketErr != nil:
		conditions.Set(conds, backend.Generation, backendsv1alpha1.BucketReadyCondition, bucket)
		applyLock(m, backend, backendsv1alpha1.CosBackendKind, cosFailures, lockReading{err: res.bucketErr}, backend.Spec.ForceUnlock, backend.Spec.LockPolicy, finished)
		return
	case res.stateErr != nil:
		bucket = stateObjectFailure(res.stateErr)
	default:
		backend.Status.State = res.state
		m.stateSize.WithLabelValues(backendsv1alpha1.CosBackendKind, backend.Namespace, backend.Name).Set(float64(res.state.SizeBytes))
		if obs, ok := unencryptedState(backend.Spec.Encryption, res.state); ok {
			bucket = obs
		}
	}
	conditions.Set(conds, backend.Generation, backendsv1alpha1.BucketReadyCondition, bucket)
	applyLock(m, backend, backendsv1alpha1.CosBackendKind, cosFailures, res.lock, backend.Spec.ForceUnlock, backend.Spec.LockPolicy, finished)
}

// cosConfig is the COS client configuration of a spec.
func cosConfig(spec backendsv1alpha1.CosBackendSpec, region string, secrets render.CosSecrets) cos.Config {
	return cos.Config{
		Bucket:     spec.Bucket,
		Region:     region,
		Prefix:     spec.Prefix,
		Key:        spec.Key,
		Accelerate: spec.Accelerate != nil && *spec.Accelerate,
		Endpoint:   spec.Endpoint,
		// Admission refuses an http:// endpoint unless the spec allows it.
		AllowHTTPEndpoint: spec.AllowInsecureEndpoint,
		SecretID:          string(secrets.SecretID),
		SecretKey:         string(secrets.SecretKey),
		SecurityToken:     string(secrets.SecurityToken),
	}
}

// stateObjectFailure is the BucketReady condition for a bucket that
// exists but whose state object cannot be used: DecryptionFailed,
// BudgetExceeded (a key derivation refused), or StateUnreadable whatever
// the cause, whose next step the message gives (see failureClasses).
func stateObjectFailure(err error) conditions.Observation {
	class := classifyFailure(cosFailures, err)
	reason := backendsv1alpha1.StateUnreadableReason
	if class.reason == backendsv1alpha1.DecryptionFailedReason || class.reason == backendsv1alpha1.BudgetExceededReason {
		reason = class.reason
	}
	return conditions.Observation{Status: metav1.ConditionFalse, Reason: reason,
		Message: fmt.Sprintf("The bucket exists, but its state object cannot be used: %s. %s", errorText(err), class.nextStep(err))}
}

// bucketChecks say what a failed bucket check is, by the reason
// classifyFailure gives it, formatted with the bucket; the message goes
// on with the error and what to check.
var bucketChecks = map[string]string{
	backendsv1alpha1.AddressDeniedReason:  "COS for bucket %s cannot be reached",
	backendsv1alpha1.BucketNotFoundReason: "Bucket %s does not exist",
	backendsv1alpha1.AccessDeniedReason:   "COS refused access to bucket %s",
	backendsv1alpha1.UnreachableReason:    "COS cannot be reached for bucket %s",
	backendsv1alpha1.TLSErrorReason:       "COS cannot be reached over TLS for bucket %s",
}

// bucketObservation is the BucketReady condition for a bucket check.
func bucketObservation(bucket string, err error) conditions.Observation {
	if err == nil {
		return conditions.Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.ReachableReason,
			Message: fmt.Sprintf("Bucket %s exists and can be read", bucket)}
	}
	class := classifyFailure(cosFailures, err)
	format, ok := bucketChecks[class.reason]
	if !ok {
		format = "Checking bucket %s failed"
	}
	return conditions.Observation{Status: metav1.ConditionFalse, Reason: class.reason,
		Message: fmt.Sprintf(format+": %s. %s", bucket, errorText(err), class.nextStep(err))}
}
