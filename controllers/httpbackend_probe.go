package controllers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
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

// httpProbeCondition is the condition Ready follows for an HttpBackend: ""
// when probing is disabled.
func httpProbeCondition(b *backendsv1alpha1.HttpBackend) string {
	if httpProbeInterval(b) == 0 {
		return ""
	}
	return backendsv1alpha1.StateReachableCondition
}

// httpProbeInterval is the probe period of an HttpBackend; 0 disables
// probing.
func httpProbeInterval(b *backendsv1alpha1.HttpBackend) time.Duration {
	if b.Spec.Probe == nil {
		return probeInterval(nil)
	}
	return probeInterval(&b.Spec.Probe.ProbeSpec)
}

// reconcileProbe reads the state through the backend's own address,
// credentials, TLS and retry settings, and with probe.lockCheck or
// forceUnlock learns the lock holder and releases the lock forceUnlock
// names. The reads run off the reconcile path (see prober): a due probe is
// submitted, and the reconcile that its end triggers applies what it
// learned to StateReachable, Locked, status.state and status.lock. It sets
// scope.requeueAfter to the next probe and scope.probePending while one is
// under way.
func (r *HttpBackendReconciler) reconcileProbe(ctx context.Context, s *httpScope) error {
	backend := s.backend
	interval := httpProbeInterval(backend)
	lockWork := (backend.Spec.Probe != nil && backend.Spec.Probe.LockCheck) || backend.Spec.ForceUnlock != nil
	if interval == 0 {
		setCondition(&backend.Status.Conditions, backend.Generation, backendsv1alpha1.StateReachableCondition, observation{
			status: metav1.ConditionUnknown, reason: backendsv1alpha1.ProbeDisabledReason,
			message: "Probing is disabled: probe.interval is 0s",
		})
		backend.Status.State = nil
		if !lockWork {
			clearLock(backend, &backend.Status.Lock, httpBackendKind)
			r.probes.forget(probeKey{kind: httpBackendKind, NamespacedName: client.ObjectKeyFromObject(backend)})
			return nil
		}
	}

	inputs := fingerprint([]byte(backend.UID), []byte(strconv.FormatInt(backend.Generation, 10)),
		s.secrets.Password, s.secrets.ClientCertificatePEM, s.secrets.ClientPrivateKeyPEM, s.secrets.ClientCACertificatePEM)
	task := probeTask{kind: httpBackendKind, obj: backend, inputs: inputs, interval: interval,
		condition: backendsv1alpha1.StateReachableCondition}
	step := r.probeStep(ctx, task)
	s.requeueAfter, s.probePending, s.applied = step.requeueAfter, step.pending, step.ack
	if step.result != nil {
		applyHTTPProbe(backend, step.result.value.(httpProbeResult), step.result.finished)
		return nil
	}
	if !step.submit {
		return nil
	}

	log := ctrl.LoggerFrom(ctx)
	sc, err := r.opts.stateClients(stateClientConfig(backend.Spec, s.secrets), log.WithName("stateclient"))
	if err != nil {
		return stall(backendsv1alpha1.InvalidSpecReason, "Cannot build a state client: %v", err)
	}
	plan := httpProbePlan{
		fetch:       interval > 0,
		checkLock:   lockWork,
		forceUnlock: forceUnlockID(backend.Spec.ForceUnlock),
		lockID:      lockCheckID(backend.UID),
		who:         fmt.Sprintf("backend-operator lock check of HttpBackend %s/%s", backend.Namespace, backend.Name),
		info: "Taken by backend-operator to learn who holds the lock (spec.probe.lockCheck or spec.forceUnlock) " +
			"and released at once; if it stays, the operator releases it at its next probe.",
	}
	r.submitProbe(task, func(ctx context.Context) any { return runHTTPProbe(ctx, sc, plan, log) })
	s.probePending = true
	return nil
}

// httpProbePlan says what one probe of an HttpBackend does.
type httpProbePlan struct {
	// fetch reads the state (probing is enabled).
	fetch bool
	// checkLock learns the lock holder by taking the lock.
	checkLock bool
	// forceUnlock is the lock ID forceUnlock names, or "".
	forceUnlock string
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
func runHTTPProbe(ctx context.Context, sc StateClient, plan httpProbePlan, log logr.Logger) httpProbeResult {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var res httpProbeResult
	if plan.fetch {
		start := time.Now()
		res.fetched = true
		res.summary, res.fetchErr = sc.FetchSummary(ctx)
		probeDuration.WithLabelValues(httpBackendKind, stateObservation(res.summary, res.fetchErr).reason).Observe(time.Since(start).Seconds())
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
// once; when it is held by the ID plan.forceUnlock names, it is released
// for good (see releaseNamedLock). A lock the check took earlier and could
// not release has the ID it takes now: it is released, and the lock is
// checked again.
func checkHTTPLock(ctx context.Context, sc StateClient, plan httpProbePlan) lockReading {
	info := stateclient.LockInfo{ID: plan.lockID, Operation: lockCheckOperation, Who: plan.who, Info: plan.info, Created: time.Now().UTC()}
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
		if plan.forceUnlock != "" && r.holder != nil && r.holder.ID == plan.forceUnlock {
			r.releaseErr = releaseNamedLock(ctx, sc, plan.forceUnlock)
			r.released = r.releaseErr == nil
		}
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
func releaseNamedLock(ctx context.Context, sc StateClient, id string) error {
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
// Locked and status.lock from the lock check, and status.lastForceUnlock.
// Its event comes from the Locked transition (see transitionEvents), so
// writing the same result again emits nothing more.
func applyHTTPProbe(backend *backendsv1alpha1.HttpBackend, res httpProbeResult, finished time.Time) {
	conds := &backend.Status.Conditions
	gen := backend.Generation
	if res.fetched {
		setCondition(conds, gen, backendsv1alpha1.StateReachableCondition, stateObservation(res.summary, res.fetchErr))
		if res.fetchErr == nil {
			backend.Status.State = stateSummary(res.summary)
			stateSize.WithLabelValues(httpBackendKind, backend.Namespace, backend.Name).Set(float64(res.summary.SizeBytes))
		}
	}
	if !res.lockChecked {
		clearLock(backend, &backend.Status.Lock, httpBackendKind)
		return
	}
	if res.lock.released {
		backend.Status.LastForceUnlock = &backendsv1alpha1.ForceUnlockStatus{LockID: res.lock.holder.ID, Time: metav1.NewTime(finished)}
	}
	applyLock(backend, &backend.Status.Lock, httpBackendKind, lockStatus(res.lock, forceUnlockID(backend.Spec.ForceUnlock)))
}

// applyLock writes a lock verdict into a backend's Locked condition,
// status.lock and lock metric; a verdict that learned nothing of the
// holder leaves status.lock and the metric as they were.
func applyLock(obj statusObject, lock **backendsv1alpha1.LockInfo, kind string, v lockVerdict) {
	if v.known {
		*lock = v.holder
		held := 0.0
		if v.holder != nil || v.obs.status == metav1.ConditionTrue {
			held = 1
		}
		lockHeld.WithLabelValues(kind, obj.GetNamespace(), obj.GetName()).Set(held)
	}
	setCondition(obj.StatusConditions(), obj.GetGeneration(), backendsv1alpha1.LockedCondition, v.obs)
}

// clearLock forgets the lock of a backend whose lock is not checked.
func clearLock(obj interface {
	GetNamespace() string
	GetName() string
	StatusConditions() *[]metav1.Condition
}, lock **backendsv1alpha1.LockInfo, kind string) {
	meta.RemoveStatusCondition(obj.StatusConditions(), backendsv1alpha1.LockedCondition)
	*lock = nil
	lockHeld.DeleteLabelValues(kind, obj.GetNamespace(), obj.GetName())
}

// forceUnlockID is the lock ID a backend's spec.forceUnlock names, or "".
func forceUnlockID(f *backendsv1alpha1.ForceUnlockSpec) string {
	if f == nil {
		return ""
	}
	return f.LockID
}
