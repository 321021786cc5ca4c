package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"k8s.io/utils/clock"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/conformance"
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
	// server is what the state server does with locks (status.server),
	// nil when it is not known; learnServer has the probe learn it first
	// (see conformance.Check), with the lock check's Who and Info.
	server      *conformance.Behaviour
	learnServer bool
	// learnWhenStateExists has the check wait for the state to exist: a
	// LOCK of a missing state creates it on some servers (GitLab's).
	learnWhenStateExists bool
	// metrics record the probe's duration, by clock.
	metrics *operatorMetrics
	clock   clock.PassiveClock
	// lockID, who and info are the ID, Who and Info of the lock check's
	// own lock: they tell whoever meets it who holds it, and why.
	// created is its Created: the object's creation, so that the
	// LockInfo is the same at every check and after a restart, and a
	// server that releases a lock only on its exact LockInfo gets it.
	lockID, who, info string
	created           time.Time
}

// lockCheckInfo is the LockInfo of plan's lock check: the same at every
// probe of the object.
func (plan httpProbeRun) lockCheckInfo() stateclient.LockInfo {
	return stateclient.LockInfo{ID: plan.lockID, Operation: lockCheckOperation, Who: plan.who, Info: plan.info, Created: plan.created.UTC()}
}

// httpProbeResult is what one probe of an HttpBackend learned.
type httpProbeResult struct {
	// fetched is true when the state was read; summary and fetchErr are
	// its outcome.
	fetched  bool
	summary  *stateclient.StateSummary
	fetchErr error
	// learned is what the state server was seen to do with locks, when
	// the probe checked it.
	learned *conformance.Behaviour
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
	var learnErr error
	absent := false
	if plan.learnServer && plan.learnWhenStateExists {
		status, err := sc.FetchStatus(ctx)
		absent = err == nil && status == http.StatusNotFound
	}
	if plan.learnServer && !absent {
		res.learned, learnErr = learnServer(ctx, sc, plan)
		if res.learned != nil {
			plan.server = res.learned
		}
	}
	if plan.checkLock {
		res.lockChecked = true
		switch {
		case plan.server == nil && absent:
			res.lock = lockReading{skip: &conditions.Observation{Status: metav1.ConditionUnknown, Reason: backendsv1alpha1.LockNotCheckedReason,
				Message: "The lock is not checked while the state does not exist: the operator first learns what the state server does with locks, " +
					"with a lock of its own, and on some servers (GitLab's) a LOCK creates the state; it checks once a run has written it."}}
		case plan.server == nil:
			// The check could not run (another holds the lock, say):
			// read the lock as any server allows (conformance.Unchecked).
			res.lock = checkHTTPLock(ctx, sc, plan, conformance.Unchecked())
		default:
			res.lock = checkHTTPLock(ctx, sc, plan, conformance.Decide(*plan.server))
		}
	}
	if learnErr != nil {
		log.V(1).Info("Could not learn what the state server does with locks; retried at a later probe", "reason", errorText(learnErr))
	}
	log.V(1).Info("Probed the backend", "fetched", res.fetched, "learnedServer", res.learned != nil, "lockChecked", res.lockChecked)
	return res
}

// learnServer checks what the state server does with locks, with locks of
// plan's lock check only (see conformance.Check); nil and why when the
// check could not complete (another holds the lock, say).
func learnServer(ctx context.Context, sc stateClient, plan httpProbeRun) (*conformance.Behaviour, error) {
	seq := 0
	res, err := conformance.Check(ctx, sc, conformance.Options{
		Who: plan.who, Info: plan.info, Now: plan.clock.Now,
		// The check's first lock is the lock check's own; the others
		// derive from it, so that a lock left behind is recognised.
		NewID: func() string {
			seq++
			if seq == 1 {
				return plan.lockID
			}
			return uuid.NewSHA1(lockCheckNamespace, fmt.Appendf(nil, "%s/%d", plan.lockID, seq)).String()
		},
	})
	if err != nil || !res.Complete {
		if err == nil {
			err = errors.New("the check did not complete")
		}
		return nil, err
	}
	return &res.Behaviour, nil
}

// withoutEchoes is holder less the fields whose values are those of the
// LOCK the lock check sent (sent): on a server not checked yet, they may
// be the check's own values echoed back rather than the holder's (as
// GitLab's conflicts carry them), so status does not show them.
func withoutEchoes(holder *backendsv1alpha1.LockInfo, sent stateclient.LockInfo) *backendsv1alpha1.LockInfo {
	if holder == nil || holder.ID == sent.ID {
		// None, or the check's own lock: its fields are its own.
		return holder
	}
	h := *holder
	if h.Operation == sent.Operation {
		h.Operation = ""
	}
	if h.Info == sent.Info {
		h.Info = ""
	}
	if h.Who == sent.Who {
		h.Who = ""
	}
	if h.Version == sent.Version {
		h.Version = ""
	}
	if h.Path == sent.Path {
		h.Path = ""
	}
	if h.Created != nil && h.Created.Time.Equal(sent.Created) {
		h.Created = nil
	}
	return &h
}

// checkHTTPLock learns the holder of the lock by taking it, as the state
// server's features allow: the protocol has no call to read a lock. When
// the lock is free it is released at once, with the body the server
// takes; when it is held by the ID plan.forceUnlock names, or by a holder
// whose Pod plan.holder finds gone, it is released for good as the server
// allows (see settleHeldLock and releaseNamedLock). A lock the check took
// earlier and could not release has the ID it takes now: it is released,
// and the lock is checked again.
func checkHTTPLock(ctx context.Context, sc stateClient, plan httpProbeRun, f conformance.Features) lockReading {
	if !f.LockCheck.Allowed {
		return lockReading{skip: &conditions.Observation{Status: metav1.ConditionUnknown, Reason: backendsv1alpha1.LockingUnsupportedReason,
			Message: "The lock is not checked: " + f.LockCheck.Reason + " (see status.server)."}}
	}
	if f.LockCheck.SkipWhenStateAbsent {
		if status, err := sc.FetchStatus(ctx); err == nil && status == http.StatusNotFound {
			return lockReading{skip: &conditions.Observation{Status: metav1.ConditionUnknown, Reason: backendsv1alpha1.LockNotCheckedReason,
				Message: "The lock is not checked while the state does not exist: on this server a LOCK creates it (see status.server)."}}
		}
	}
	info := plan.lockCheckInfo()
	_, err := sc.Lock(ctx, info)
	lockErr, conflict := errors.AsType[*stateclient.LockError](err)
	switch {
	case conflict && lockErr.Info != nil && lockErr.Info.ID == info.ID:
		// The check's own lock, left over: released, and checked again.
		released := releaseOwnLock(ctx, info.ID, func(ctx context.Context) error { return releaseOwn(ctx, sc, info, f.Release.Body) })
		if released != nil {
			return lockReading{held: true, holder: lockInfo(lockErr.Info), ownErr: released}
		}
		_, err = sc.Lock(ctx, info)
	case conflict && mayBeOwnLeftover(lockErr, info.ID, f):
		// Perhaps the check's own lock: one UNLOCK naming it, which the
		// server releases only if it is.
		if releaseOwn(ctx, sc, info, f.Release.Body) == nil {
			_, err = sc.Lock(ctx, info)
		}
	}
	if err == nil {
		// Release it even when the probe was cancelled meanwhile (its spec
		// changed, the backend was deleted, the manager stops): a lock left
		// behind blocks every run.
		if err := releaseOwnLock(ctx, info.ID, func(ctx context.Context) error { return releaseOwn(ctx, sc, info, f.LockCheck.Body) }); err != nil {
			return lockReading{held: true, holder: lockInfo(&info), ownErr: err}
		}
		return lockReading{}
	}
	lockErr, ok := errors.AsType[*stateclient.LockError](err)
	if !ok {
		return lockReading{err: err}
	}
	r := lockReading{held: true, holder: holderOf(lockErr, f.LockCheck, info)}
	holderJSON := lockErr.HolderJSON()
	holder := plan.holder
	if holder != nil && !f.ReleaseWhenHolderGone.Allowed {
		// No Pod is looked for: none could be released.
		holder = nil
		if r.holder != nil && r.holder.ID != "" {
			r.sighting = holderSighting{state: holderPolicyUnsupported, err: errors.New(f.ReleaseWhenHolderGone.Reason)}
		}
	}
	settleHeldLock(ctx, &r, plan.forceUnlock, holder, func(ctx context.Context, id string, gone bool) error {
		named := f.ForceUnlock
		if gone {
			named = f.ReleaseWhenHolderGone
		}
		if r.holder == nil && named.NeedsHolderRead {
			// Only a conflict naming the lock could make this body safe.
			named.Allowed = false
		}
		return releaseNamedLock(ctx, sc, named, id, holderJSON)
	})
	return r
}

// mayBeOwnLeftover reports whether a conflict answering the lock check's
// LOCK may be a lock the check took earlier and could not release: the
// holder it names is the check's ID, or, on a server whose conflicts name
// no holder, the release body names the lock and the server checks it, so
// that trying to release it can release the check's own lock only.
func mayBeOwnLeftover(lockErr *stateclient.LockError, id string, f conformance.Features) bool {
	if lockErr.Info != nil {
		return lockErr.Info.ID == id
	}
	return !f.LockCheck.HolderKnown && f.Release.Guard == conformance.GuardNone
}

// holderOf is the holder a conflict names, with only the fields the server
// vouches for as the holder's (a server may echo the requester's own: on a
// server not checked yet, those equal to sent, the LockInfo of the request
// refused, are dropped); nil when it names none.
func holderOf(lockErr *stateclient.LockError, plan conformance.LockCheckPlan, sent stateclient.LockInfo) *backendsv1alpha1.LockInfo {
	if lockErr.Info == nil || !plan.HolderKnown {
		return nil
	}
	h := lockInfo(lockErr.Info)
	keep := func(key string) bool { return slices.Contains(plan.HolderFields, key) }
	if !keep("Operation") {
		h.Operation = ""
	}
	if !keep("Info") {
		h.Info = ""
	}
	if !keep("Who") {
		h.Who = ""
	}
	if !keep("Version") {
		h.Version = ""
	}
	if !keep("Created") {
		h.Created = nil
	}
	if !keep("Path") {
		h.Path = ""
	}
	if plan.DropEchoes {
		return withoutEchoes(h, sent)
	}
	return h
}

// releaseOwn releases a lock the operator took with info, with body, the
// form the server takes: the exact LockInfo it was taken with (rebuilt
// byte for byte, so also after a restart), the ID-only body, or the empty
// body, sent only right after the operator's own LOCK succeeded or a
// conflict named its lock.
func releaseOwn(ctx context.Context, sc stateClient, info stateclient.LockInfo, body conformance.UnlockBody) error {
	switch body {
	case conformance.BodyID:
		return sc.ForceUnlock(ctx, info.ID)
	case conformance.BodyEmpty:
		return sc.ForceUnlockEmptyBody(ctx)
	}
	exact, err := info.Encode()
	if err != nil {
		return fmt.Errorf("encoding the lock's LockInfo: %w", err)
	}
	return sc.UnlockWithBody(ctx, exact)
}

// releaseOwnLock runs release, the release of lock id, which the lock
// check took, until it succeeds, at most lockReleaseAttempts times, each
// within lockReleaseTimeout, even when ctx is cancelled: a lock left
// behind blocks every run. A conflict answer naming another holder, or
// none, means the check's lock is gone; one naming id is a refusal (a
// server that releases only the exact body echoes the refused request).
func releaseOwnLock(ctx context.Context, id string, release func(context.Context) error) error {
	ctx = context.WithoutCancel(ctx)
	var err error
	for attempt := range lockReleaseAttempts {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * lockReleaseWait)
		}
		attemptCtx, cancel := context.WithTimeout(ctx, lockReleaseTimeout)
		err = release(attemptCtx)
		cancel()
		lockErr, conflict := errors.AsType[*stateclient.LockError](err)
		if err == nil || (conflict && (lockErr.Info == nil || lockErr.Info.ID != id)) {
			return nil
		}
	}
	return err
}

// releaseNamedLock releases lock id, which the holder just read holds,
// without having taken it, as plan (the server's forceUnlock or
// releaseWhenHolderGone plan) allows: with the ID-only body where the
// server checks IDs, with the holder's LockInfo as the conflict carried it
// (holderJSON) where the server releases only the exact body, or with a
// body that may release whatever lock is held, sent right after the
// conflict named id. A plan that does not allow it is a
// *forceUnlockUnsupportedError saying why; a server that refuses the
// body is a *forceUnlockRefusedError with its status code.
func releaseNamedLock(ctx context.Context, sc stateClient, plan conformance.NamedUnlockPlan, id string, holderJSON []byte) error {
	if !plan.Allowed {
		return &forceUnlockUnsupportedError{plan: plan}
	}
	var err error
	switch plan.Body {
	case conformance.BodyID:
		err = sc.ForceUnlock(ctx, id)
	case conformance.BodyEmpty:
		err = sc.ForceUnlockEmptyBody(ctx)
	default:
		if holderJSON == nil {
			return &forceUnlockUnsupportedError{plan: conformance.NamedUnlockPlan{
				Reason: "the conflict did not carry the holder's LockInfo, which this server needs", Terraform: plan.Terraform, OpenTofu: plan.OpenTofu}}
		}
		err = sc.UnlockWithBody(ctx, holderJSON)
	}
	if status := refusedStatus(err, id); status != 0 {
		return &forceUnlockRefusedError{body: plan.Body, status: status}
	}
	if lockErr, ok := errors.AsType[*stateclient.LockError](err); ok && plan.Body == conformance.BodyID {
		// The server checks the ID, and answered that the lock held is
		// not the one named.
		return &namedLockNotHeldError{id: id, status: lockErr.StatusCode}
	}
	return err
}

// applyHTTPProbe writes what a probe that ended at finished learned into
// the backend's status: StateReachable and status.state from the read,
// what it learned of the state server (status.server, learned with the
// inputs checkedWith), and the lock (see applyLock) when it was checked.
// A lock the probe does not check is the StateLocks' (see
// applyUncheckedLock).
func applyHTTPProbe(m *operatorMetrics, backend *backendsv1alpha1.HttpBackend, res httpProbeResult, checkedWith string, finished time.Time) {
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
	if res.learned != nil {
		backend.Status.Server = serverStatus(*res.learned, checkedWith, finished)
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
