package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/clock"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/render"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// lockCheckOperation is the operation our own short-lived lock records, so
// that a Terraform run that meets it tells its user who holds the lock.
const lockCheckOperation = "OperationTypeInvalid"

// Bounds of the release of the lock check's own lock, which outlives the
// probe's context: each attempt has its own deadline, and a failed attempt
// is retried after a short wait.
const (
	lockReleaseAttempts = 3
	lockReleaseTimeout  = 15 * time.Second
	lockReleaseWait     = time.Second
)

// lockCheckNamespace derives the lock check's lock IDs (see lockCheckID).
var lockCheckNamespace = uuid.MustParse("6f1d1c2e-2b0a-4d5e-9a43-1f0c7c9b8e21")

// lockCheckID is the ID of the lock the lock check of the object uid
// takes: the same on every probe and after a restart, so that a lock the
// check could not release is recognised as the operator's own by the next
// probe, which releases it.
func lockCheckID(uid types.UID) string {
	return uuid.NewSHA1(lockCheckNamespace, []byte(uid)).String()
}

// httpProbeRun says what one probe of an HttpBackend does.
type httpProbeRun struct {
	// fetch reads the state (probing is enabled).
	fetch bool
	// decrypter decrypts an encrypted state.
	decrypter stateDecrypter
	// checkLock learns the lock holder by taking the lock.
	checkLock bool
	// forceUnlock is the lock ID forceUnlock names, or "".
	forceUnlock string
	// holder applies lockPolicy.releaseWhenHolderGone; nil when it is off.
	holder *holderCheck
	// metrics record the probe's duration, by clock.
	metrics *operatorMetrics
	clock   clock.PassiveClock
	// lockID, who and info are the ID, Who and Info of the lock check's
	// own lock: they tell whoever meets it who holds it, and why.
	lockID, who, info string
}

// httpProbeResult is what one probe of an HttpBackend learned.
type httpProbeResult struct {
	// fetched is true when the state was read; summary and fetchErr are
	// its outcome.
	fetched  bool
	summary  *stateclient.StateSummary
	fetchErr error
	// lockChecked is true when the lock was checked; lock is its outcome.
	lockChecked bool
	lock        lockReading
}

// runHTTPProbe performs a probe with sc, within probeTimeout. It reads
// only what plan asks for and never touches the backend object.
func runHTTPProbe(ctx context.Context, sc stateClient, plan httpProbeRun, log logr.Logger) httpProbeResult {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var res httpProbeResult
	if plan.fetch {
		start := plan.clock.Now()
		res.fetched = true
		res.summary, res.fetchErr = sc.FetchSummary(ctx, plan.decrypter.forRead(ctx))
		res.fetchErr = plan.decrypter.explain(res.fetchErr)
		plan.metrics.probeDuration.WithLabelValues(backendsv1alpha1.HttpBackendKind, stateObservation(res.summary, res.fetchErr).Reason).Observe(plan.clock.Since(start).Seconds())
	}
	if plan.checkLock {
		res.lockChecked = true
		res.lock = checkHTTPLock(ctx, sc, plan)
	}
	log.V(1).Info("Probed the backend", "fetched", res.fetched, "lockChecked", res.lockChecked)
	return res
}

// checkHTTPLock learns the holder of the lock by taking it: the protocol
// has no call to read a lock. When the lock is free it is released at
// once; when it is held by the ID plan.forceUnlock names, or by a holder
// whose Pod plan.holder finds gone, it is released for good (see
// settleHeldLock and releaseNamedLock). A lock the check took earlier and
// could not release has the ID it takes now: it is released, and the
// lock is checked again.
func checkHTTPLock(ctx context.Context, sc stateClient, plan httpProbeRun) lockReading {
	info := stateclient.LockInfo{ID: plan.lockID, Operation: lockCheckOperation, Who: plan.who, Info: plan.info, Created: plan.clock.Now().UTC()}
	_, err := sc.Lock(ctx, info)
	var lockErr *stateclient.LockError
	if errors.As(err, &lockErr) && lockErr.Info != nil && lockErr.Info.ID == info.ID {
		if err := releaseOwnLock(ctx, func(ctx context.Context) error { return releaseNamedLock(ctx, sc, info.ID) }); err != nil {
			return lockReading{held: true, holder: lockInfo(lockErr.Info), ownErr: err}
		}
		_, err = sc.Lock(ctx, info)
	}
	switch {
	case err == nil:
		// Release it even when the probe was cancelled meanwhile (its spec
		// changed, the backend was deleted, the manager stops): a lock left
		// behind blocks every run.
		if err := releaseOwnLock(ctx, func(ctx context.Context) error { return sc.Unlock(ctx, info.ID) }); err != nil {
			return lockReading{held: true, holder: lockInfo(&info), ownErr: err}
		}
		return lockReading{}
	case errors.As(err, &lockErr):
		r := lockReading{held: true, holder: lockInfo(lockErr.Info)}
		settleHeldLock(ctx, &r, plan.forceUnlock, plan.holder, func(ctx context.Context, id string) error {
			return releaseNamedLock(ctx, sc, id)
		})
		return r
	default:
		return lockReading{err: err}
	}
}

// releaseOwnLock runs release, the release of a lock the lock check took,
// until it succeeds, at most lockReleaseAttempts times, each within
// lockReleaseTimeout, even when ctx is cancelled: a lock left behind
// blocks every run. An answer saying the lock is held by someone else, or
// by no one, means the check's lock is gone.
func releaseOwnLock(ctx context.Context, release func(context.Context) error) error {
	ctx = context.WithoutCancel(ctx)
	var err error
	for attempt := range lockReleaseAttempts {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * lockReleaseWait)
		}
		attemptCtx, cancel := context.WithTimeout(ctx, lockReleaseTimeout)
		err = release(attemptCtx)
		cancel()
		var lockErr *stateclient.LockError
		if err == nil || errors.As(err, &lockErr) {
			return nil
		}
	}
	return err
}

// releaseNamedLock releases lock id, which the holder just read holds,
// without having taken it. It sends the UNLOCK naming the ID first, and
// Terraform's empty-body UNLOCK (which releases whatever lock is held)
// only when the server refused the first one's form: never while the
// holder is unknown or another. When the server refuses both, the error
// is a *forceUnlockRefusedError with both status codes.
func releaseNamedLock(ctx context.Context, sc stateClient, id string) error {
	err := sc.ForceUnlock(ctx, id)
	idStatus := refusedStatus(err, id)
	if idStatus == 0 {
		return err
	}
	err = sc.ForceUnlockEmptyBody(ctx)
	emptyStatus := refusedStatus(err, id)
	if err == nil || emptyStatus == 0 {
		return err
	}
	return &forceUnlockRefusedError{idBody: idStatus, emptyBody: emptyStatus}
}

// applyHTTPProbe writes what a probe that ended at finished learned into
// the backend's status: StateReachable and status.state from the read,
// and the lock (see applyLock) when it was checked. A lock the probe does
// not check is the StateLocks' (see applyUncheckedLock).
func applyHTTPProbe(m *operatorMetrics, backend *backendsv1alpha1.HttpBackend, res httpProbeResult, finished time.Time) {
	if res.fetched {
		reachable := stateObservation(res.summary, res.fetchErr)
		if res.fetchErr == nil {
			backend.Status.State = stateSummary(res.summary)
			m.stateSize.WithLabelValues(backendsv1alpha1.HttpBackendKind, backend.Namespace, backend.Name).Set(float64(res.summary.SizeBytes))
			if obs, ok := unencryptedState(backend.Spec.Encryption, backend.Status.State); ok {
				reachable = obs
			}
		}
		conditions.Set(&backend.Status.Conditions, backend.Generation, backendsv1alpha1.StateReachableCondition, reachable)
	}
	if !res.lockChecked {
		return
	}
	applyLock(m, backend, backendsv1alpha1.HttpBackendKind, httpFailures, res.lock, backend.Spec.ForceUnlock, backend.Spec.LockPolicy, finished)
}

// stateClientConfig is the state client configuration of a spec, with the
// same settings Terraform would use.
func stateClientConfig(spec backendsv1alpha1.HttpBackendSpec, secrets render.HTTPSecrets) stateclient.Config {
	cfg := stateclient.DefaultConfig(spec.Address)
	cfg.UpdateMethod = spec.UpdateMethod
	cfg.LockAddress, cfg.LockMethod = spec.LockAddress, spec.LockMethod
	cfg.UnlockAddress, cfg.UnlockMethod = spec.UnlockAddress, spec.UnlockMethod
	cfg.Username, cfg.Password = spec.Username, string(secrets.Password)
	if spec.RetryMax != nil {
		cfg.RetryMax = int(*spec.RetryMax)
	}
	if spec.RetryWaitMin != nil {
		cfg.RetryWaitMin = time.Duration(*spec.RetryWaitMin) * time.Second
	}
	if spec.RetryWaitMax != nil {
		cfg.RetryWaitMax = time.Duration(*spec.RetryWaitMax) * time.Second
	}
	cfg.SkipCertVerification = spec.SkipCertVerification
	cfg.ClientCertificatePEM = secrets.ClientCertificatePEM
	cfg.ClientPrivateKeyPEM = secrets.ClientPrivateKeyPEM
	cfg.ClientCACertificatePEM = secrets.ClientCACertificatePEM
	cfg.AttemptTimeout = probeAttemptTimeout
	return cfg
}

// stateObservation is the StateReachable condition for a fetch result.
func stateObservation(summary *stateclient.StateSummary, err error) conditions.Observation {
	if err != nil {
		return probeFailure(httpFailures, err)
	}
	if summary == nil || !summary.Present {
		return conditions.Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.ReachableReason,
			Message: "The backend answers; it holds no state yet"}
	}
	return conditions.Observation{Status: metav1.ConditionTrue, Reason: backendsv1alpha1.ReachableReason,
		Message: fmt.Sprintf("The backend answers; state serial %d, lineage %s%s", summary.Serial, summary.Lineage, encryptedSuffix(summary.Encrypted))}
}

// stateSummary is status.state for a fetch result.
func stateSummary(s *stateclient.StateSummary) *backendsv1alpha1.StateSummary {
	if s == nil || !s.Present {
		return &backendsv1alpha1.StateSummary{Present: false}
	}
	return stateStatus(s.Summary, s.SizeBytes)
}
