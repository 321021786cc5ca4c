package controllers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// lockCheckOperation is the operation our own short-lived lock records, so
// that a Terraform run that meets it tells its user who holds the lock.
const lockCheckOperation = "OperationTypeInvalid"

// lockCheckWho is the holder our own short-lived lock names.
const lockCheckWho = "backend-operator"

// lockReleaseTimeout bounds the release of the lock check's own lock,
// which outlives the probe's context.
const lockReleaseTimeout = 30 * time.Second

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
		forceUnlock: forceUnlockID(backend),
		info:        fmt.Sprintf("Lock check of HttpBackend %s/%s by %s, released at once", backend.Namespace, backend.Name, lockCheckWho),
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
	// info describes the lock check's own lock to whoever meets it.
	info string
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
	lock        lockCheck
}

// lockCheck is the outcome of a lock check.
type lockCheck struct {
	// err is set when the check failed: the holder is unknown.
	err error
	// unlockErr is set when the check took the lock and could not
	// release it.
	unlockErr error
	// held is true when someone else holds the lock; holder describes
	// them, nil when their LockInfo cannot be read.
	held   bool
	holder *backendsv1alpha1.LockInfo
	// forceUnlocked is true when forceUnlock released holder;
	// forceUnlockErr is set when it tried and failed.
	forceUnlocked  bool
	forceUnlockErr error
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
// for good.
func checkHTTPLock(ctx context.Context, sc StateClient, plan httpProbePlan) lockCheck {
	info := stateclient.NewLockInfo(lockCheckOperation, lockCheckWho)
	info.Info = plan.info
	_, err := sc.Lock(ctx, info)
	var lockErr *stateclient.LockError
	switch {
	case err == nil:
		// Release it even when the probe was cancelled meanwhile (its spec
		// changed, the backend was deleted, the manager stops): a lock left
		// behind blocks every run.
		release, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockReleaseTimeout)
		defer cancel()
		return lockCheck{unlockErr: sc.Unlock(release, info.ID)}
	case errors.As(err, &lockErr):
		out := lockCheck{held: true, holder: lockInfo(lockErr.Info)}
		if plan.forceUnlock != "" && out.holder != nil && out.holder.ID == plan.forceUnlock {
			if err := sc.ForceUnlock(ctx, out.holder.ID); err != nil {
				out.forceUnlockErr = err
			} else {
				out.forceUnlocked = true
			}
		}
		return out
	default:
		return lockCheck{err: err}
	}
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
	lock := res.lock
	if lock.forceUnlocked {
		backend.Status.LastForceUnlock = &backendsv1alpha1.ForceUnlockStatus{LockID: lock.holder.ID, Time: metav1.NewTime(finished)}
	}
	known, holder, obs := httpLockObservation(backend, lock)
	if known {
		backend.Status.Lock = holder
		held := 0.0
		if holder != nil {
			held = 1
		}
		lockHeld.WithLabelValues(httpBackendKind, backend.Namespace, backend.Name).Set(held)
	}
	setCondition(conds, gen, backendsv1alpha1.LockedCondition, obs)
}

// httpLockObservation is the Locked condition for a lock check of backend,
// and, when known is true, the holder to record (nil: not locked). When
// the check failed the recorded holder is left as it was.
func httpLockObservation(backend *backendsv1alpha1.HttpBackend, lock lockCheck) (known bool, holder *backendsv1alpha1.LockInfo, obs observation) {
	switch {
	case lock.err != nil:
		obs := probeFailure(lock.err)
		obs.message = "Checking the lock failed: " + obs.message
		return false, nil, obs
	case lock.unlockErr != nil:
		return false, nil, observation{
			status: metav1.ConditionUnknown, reason: probeFailure(lock.unlockErr).reason,
			message: "Releasing the lock check's own lock failed: " + lock.unlockErr.Error(),
		}
	case lock.forceUnlocked:
		return true, nil, observation{status: metav1.ConditionFalse, reason: backendsv1alpha1.ForceUnlockedReason,
			message: fmt.Sprintf("The state is not locked. Released lock %s held by %s, as forceUnlock.lockID asked.", lock.holder.ID, lock.holder.Who)}
	case lock.forceUnlockErr != nil:
		obs := probeFailure(lock.forceUnlockErr)
		obs.status = metav1.ConditionTrue
		obs.message = fmt.Sprintf("%s; force unlock of %s failed: %s", describeHolder(lock.holder), lock.holder.ID, lock.forceUnlockErr.Error())
		return true, lock.holder, obs
	case lock.held:
		reason := backendsv1alpha1.LockHeldReason
		if forceUnlockID(backend) != "" {
			reason = backendsv1alpha1.ForceUnlockSkippedReason
		}
		return true, lock.holder, observation{status: metav1.ConditionTrue, reason: reason,
			message: describeHolder(lock.holder) + forceUnlockNote(backend, lock.holder)}
	}
	return true, nil, observation{status: metav1.ConditionFalse, reason: backendsv1alpha1.NotLockedReason,
		message: "The state is not locked." + forceUnlockNote(backend, nil)}
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

// forceUnlockID is the lock ID forceUnlock names, or "".
func forceUnlockID(b *backendsv1alpha1.HttpBackend) string {
	if b.Spec.ForceUnlock == nil {
		return ""
	}
	return b.Spec.ForceUnlock.LockID
}

// forceUnlockNote says why forceUnlock left the lock alone, or "" when it
// is not set.
func forceUnlockNote(b *backendsv1alpha1.HttpBackend, holder *backendsv1alpha1.LockInfo) string {
	id := forceUnlockID(b)
	switch {
	case id == "":
		return ""
	case holder == nil:
		return fmt.Sprintf(" forceUnlock.lockID %s: no lock is held, nothing to release.", id)
	case holder.ID == "":
		return fmt.Sprintf(" forceUnlock.lockID %s: the holder's ID cannot be read, so the lock is left alone.", id)
	default:
		return fmt.Sprintf(" forceUnlock.lockID %s does not match the holder %s, so the lock is left alone.", id, holder.ID)
	}
}
