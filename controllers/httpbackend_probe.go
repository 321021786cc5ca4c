package controllers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// probeTimeout bounds one probe, retries included.
const probeTimeout = 2 * time.Minute

// lockCheckOperation is the operation our own short-lived lock records, so
// that a Terraform run that meets it tells its user who holds the lock.
const lockCheckOperation = "OperationTypeInvalid"

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

// probeInterval is the period of a probe spec; 0 disables probing. The API
// server defaults it, so nil only happens for objects built in tests.
func probeInterval(p *backendsv1alpha1.ProbeSpec) time.Duration {
	if p == nil || p.Interval == nil {
		return defaultProbeInterval
	}
	return p.Interval.Duration
}

// defaultProbeInterval is the API's default probe.interval.
const defaultProbeInterval = 5 * time.Minute

// reconcileProbe reads the state through the backend's own address,
// credentials, TLS and retry settings when a probe is due, and sets
// StateReachable and status.state. With probe.lockCheck or forceUnlock it
// also learns the lock holder (Locked, status.lock) and releases the lock
// forceUnlock names. It sets scope.requeueAfter to the next probe.
func (r *HttpBackendReconciler) reconcileProbe(ctx context.Context, s *httpScope) error {
	backend := s.backend
	key := client.ObjectKeyFromObject(backend)
	interval := httpProbeInterval(backend)
	conds := &backend.Status.Conditions
	if interval == 0 {
		setCondition(conds, backend.Generation, backendsv1alpha1.StateReachableCondition, observation{
			status: metav1.ConditionUnknown, reason: backendsv1alpha1.ProbeDisabledReason,
			message: "Probing is disabled: probe.interval is 0s",
		})
		backend.Status.State = nil
		if backend.Spec.ForceUnlock == nil {
			meta.RemoveStatusCondition(conds, backendsv1alpha1.LockedCondition)
			backend.Status.Lock = nil
			return nil
		}
	}

	inputs := fingerprint([]byte(backend.UID), []byte(strconv.FormatInt(backend.Generation, 10)),
		s.secrets.Password, s.secrets.ClientCertificatePEM, s.secrets.ClientPrivateKeyPEM, s.secrets.ClientCACertificatePEM)
	now := r.opts.clock.Now()
	if due, wait := r.schedule.due(key, inputs, now); !due {
		s.requeueAfter = wait
		return nil
	}

	log := ctrl.LoggerFrom(ctx)
	sc, err := r.opts.stateClients(stateClientConfig(backend.Spec, s.secrets), log.WithName("stateclient"))
	if err != nil {
		return stall(backendsv1alpha1.InvalidSpecReason, "Cannot build a state client: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()

	if interval > 0 {
		r.probeState(ctx, backend, sc)
	}
	if (backend.Spec.Probe != nil && backend.Spec.Probe.LockCheck) || backend.Spec.ForceUnlock != nil {
		r.checkLock(ctx, backend, sc)
	} else {
		meta.RemoveStatusCondition(conds, backendsv1alpha1.LockedCondition)
		backend.Status.Lock = nil
		lockHeld.DeleteLabelValues(httpBackendKind, backend.Namespace, backend.Name)
	}
	s.requeueAfter = r.schedule.probed(key, inputs, now, interval)
	return nil
}

// probeState fetches a summary of the state and records what it saw.
func (r *HttpBackendReconciler) probeState(ctx context.Context, backend *backendsv1alpha1.HttpBackend, sc StateClient) {
	start := time.Now()
	summary, err := sc.FetchSummary(ctx)
	obs := stateObservation(summary, err)
	probeDuration.WithLabelValues(httpBackendKind, obs.reason).Observe(time.Since(start).Seconds())
	setCondition(&backend.Status.Conditions, backend.Generation, backendsv1alpha1.StateReachableCondition, obs)
	if err != nil {
		return
	}
	backend.Status.State = stateSummary(summary)
	stateSize.WithLabelValues(httpBackendKind, backend.Namespace, backend.Name).Set(float64(summary.SizeBytes))
}

// checkLock learns the holder of the lock by taking it: the protocol has no
// call to read a lock. When the lock is free it is released at once; when
// it is held by the ID forceUnlock names, it is released for good.
func (r *HttpBackendReconciler) checkLock(ctx context.Context, backend *backendsv1alpha1.HttpBackend, sc StateClient) {
	conds := &backend.Status.Conditions
	gen := backend.Generation
	info := stateclient.NewLockInfo(lockCheckOperation, "backend-operator")
	info.Info = fmt.Sprintf("Lock check of HttpBackend %s/%s by backend-operator, released at once", backend.Namespace, backend.Name)

	_, err := sc.Lock(ctx, info)
	var lockErr *stateclient.LockError
	switch {
	case err == nil:
		if unlockErr := sc.Unlock(ctx, info.ID); unlockErr != nil {
			setCondition(conds, gen, backendsv1alpha1.LockedCondition, observation{
				status: metav1.ConditionUnknown, reason: probeFailure(unlockErr).reason,
				message: "Releasing the lock check's own lock failed: " + unlockErr.Error(),
			})
			return
		}
		r.setUnlocked(backend, backendsv1alpha1.NotLockedReason, forceUnlockNote(backend, nil))
	case errors.As(err, &lockErr):
		holder := lockInfo(lockErr.Info)
		if id := forceUnlockID(backend); id != "" && holder != nil && holder.ID == id {
			r.forceUnlock(ctx, backend, sc, holder)
			return
		}
		backend.Status.Lock = holder
		lockHeld.WithLabelValues(httpBackendKind, backend.Namespace, backend.Name).Set(1)
		reason := backendsv1alpha1.LockHeldReason
		if forceUnlockID(backend) != "" {
			reason = backendsv1alpha1.ForceUnlockSkippedReason
		}
		setCondition(conds, gen, backendsv1alpha1.LockedCondition, observation{
			status: metav1.ConditionTrue, reason: reason,
			message: describeHolder(holder) + forceUnlockNote(backend, holder),
		})
	default:
		obs := probeFailure(err)
		obs.message = "Checking the lock failed: " + obs.message
		setCondition(conds, gen, backendsv1alpha1.LockedCondition, obs)
	}
}

// forceUnlock releases the lock held by the ID forceUnlock names.
func (r *HttpBackendReconciler) forceUnlock(ctx context.Context, backend *backendsv1alpha1.HttpBackend, sc StateClient, holder *backendsv1alpha1.LockInfo) {
	if err := sc.ForceUnlock(ctx, holder.ID); err != nil {
		backend.Status.Lock = holder
		obs := probeFailure(err)
		obs.status = metav1.ConditionTrue
		obs.message = fmt.Sprintf("%s; force unlock of %s failed: %s", describeHolder(holder), holder.ID, err.Error())
		setCondition(&backend.Status.Conditions, backend.Generation, backendsv1alpha1.LockedCondition, obs)
		return
	}
	now := metav1.NewTime(r.opts.clock.Now())
	backend.Status.LastForceUnlock = &backendsv1alpha1.ForceUnlockStatus{LockID: holder.ID, Time: now}
	r.events.Eventf(backend, nil, corev1.EventTypeNormal, backendsv1alpha1.ForceUnlockedReason, "ForceUnlock",
		"Released the state lock %s held by %s", holder.ID, holder.Who)
	r.setUnlocked(backend, backendsv1alpha1.ForceUnlockedReason,
		fmt.Sprintf(" Released lock %s as forceUnlock.lockID asked.", holder.ID))
}

// setUnlocked records that no lock is held.
func (r *HttpBackendReconciler) setUnlocked(backend *backendsv1alpha1.HttpBackend, reason, note string) {
	backend.Status.Lock = nil
	lockHeld.WithLabelValues(httpBackendKind, backend.Namespace, backend.Name).Set(0)
	setCondition(&backend.Status.Conditions, backend.Generation, backendsv1alpha1.LockedCondition, observation{
		status: metav1.ConditionFalse, reason: reason,
		message: "The state is not locked." + note,
	})
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
