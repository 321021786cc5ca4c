package controllers

// The cases of TestHealthOfEachReason (health_unit_test.go): every
// reason of every kind, with the health a user expects of it.

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/budget"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/nslabels"
	"github.com/infrastate/backend-operator/internal/conformance"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/history"
	"github.com/infrastate/backend-operator/internal/netguard"
	"github.com/infrastate/backend-operator/internal/outputs"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// healthCases are the cases of TestHealthOfEachReason: every reason of
// every kind, as the condition it decides the health with.
func healthCases() map[string]healthCase {
	refused := &stateclient.RetryError{Method: "GET", URL: "u", Attempts: 1, Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}
	status := func(code int) error { return &stateclient.StatusError{StatusCode: code} }
	untrusted := fmt.Errorf("get: %w", x509.UnknownAuthorityError{})
	denied := fmt.Errorf("dial: %w", netguard.ErrAddressDenied)
	undecryptable := fmt.Errorf("read: %w", statefile.ErrDecrypt)
	malformed := fmt.Errorf("parse: %w", statefile.ErrMalformed)
	refusedDerivation := &derivationRefusedError{exceeded: &budget.ExceededError{Budget: "key derivation CPU", Namespace: "health",
		Used: int64(7 * time.Second), Wanted: 1, Limit: int64(6 * time.Second), Flag: "key-derivation-cpu-per-namespace"}}
	cosErr := func(err error) error { return fmt.Errorf("list: %w", err) }
	now := time.Now()
	holder := &backendsv1alpha1.LockInfo{ID: "l1", Who: "runner@ci-1", Created: &metav1.Time{Time: now.Add(-2 * time.Hour)}}
	terms := lockTerms{now: now}
	past := &metav1.Time{Time: now.Add(-time.Minute)}
	encrypted := &backendsv1alpha1.StateEncryption{}
	cases := map[string]healthCase{
		// The reconciliation itself.
		"the first probe of a generation is under way": {
			reason: backendsv1alpha1.ProgressingReason, steps: forKinds(probing(), probedKinds...), want: readsProgressing,
		},
		"a new spec is not observed yet": {
			reason: backendsv1alpha1.SucceededReason, steps: withKind(forKinds(probeSucceeded(), hb, cb, rs, sh), og, granting(nil, nil)),
			then: func(obj statusObject) { obj.SetGeneration(obj.GetGeneration() + 1) }, want: readsProgressing,
		},
		"a transient error, retried with backoff": {
			reason: backendsv1alpha1.ReconcileErrorReason, steps: forKinds(erred(), allKinds...), want: readsProgressing,
		},
		"the API server refused the status": {
			reason: backendsv1alpha1.StatusRejectedReason, steps: forKinds(stalled(backendsv1alpha1.StatusRejectedReason), allKinds...), want: readsFailed,
		},

		// Ready.
		"ready": {
			reason: backendsv1alpha1.SucceededReason, steps: withKind(forKinds(probeSucceeded(), hb, cb, rs, sh), og, granting(nil, nil)), want: readsCurrent,
		},
		"a grant whose selectors can match the watched namespaces only": {
			reason: backendsv1alpha1.SucceededReason,
			steps: forKinds(granting([]string{"health", "team-b"}, nil, backendsv1alpha1.GrantConsumer{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"outputs": "network"}}}), og),
			want: readsCurrent,
		},
		"the backend answers": {
			reason: backendsv1alpha1.ReachableReason, in: "probe", steps: forKinds(probeSucceeded(), hb, cb), want: readsCurrent,
		},
		"the outputs are published": {
			reason: backendsv1alpha1.OutputsPublishedReason, in: "probe", steps: forKinds(probeSucceeded(), rs), want: readsCurrent,
		},
		"probing is disabled: Ready follows the render": {
			reason: backendsv1alpha1.ProbeDisabledReason, in: "probe", steps: forKinds(observed(*probeDisabled()), hb, cb), want: readsCurrent,
		},
		"the bucket is not checked: the only credentials are a role to assume": {
			reason: backendsv1alpha1.AssumeRoleNotSupportedReason, in: "probe",
			steps: map[string]healthStep{
				cb: observed(conditions.Observation{Status: metav1.ConditionUnknown, Reason: backendsv1alpha1.AssumeRoleNotSupportedReason, Message: "not checked"}),
			},
			want: readsCurrent,
		},
		// The RemoteState can publish nothing until the backend's spec
		// gives the operator keys: a stall (see cosResolved.openState).
		"the state cannot be read: the only credentials are a role to assume": {
			reason: backendsv1alpha1.AssumeRoleNotSupportedReason,
			steps:  forKinds(stalled(backendsv1alpha1.AssumeRoleNotSupportedReason), rs, sh, sr), want: readsFailed,
		},

		// Stalls: the user must fix the spec or a referenced object.
		"a Secret is missing": {
			reason: backendsv1alpha1.SecretNotFoundReason, steps: forKinds(stalled(backendsv1alpha1.SecretNotFoundReason), hb, cb), want: readsFailed,
		},
		"a Secret lacks a key": {
			reason: backendsv1alpha1.SecretKeyMissingReason, steps: forKinds(stalled(backendsv1alpha1.SecretKeyMissingReason), hb, cb), want: readsFailed,
		},
		"a ConfigMap is missing": {
			reason: backendsv1alpha1.ConfigMapNotFoundReason, steps: forKinds(stalled(backendsv1alpha1.ConfigMapNotFoundReason), hb), want: readsFailed,
		},
		"a ConfigMap lacks a key": {
			reason: backendsv1alpha1.ConfigMapKeyMissingReason, steps: forKinds(stalled(backendsv1alpha1.ConfigMapKeyMissingReason), hb), want: readsFailed,
		},
		"a certificate does not parse": {
			reason: backendsv1alpha1.InvalidCertificateReason, steps: forKinds(stalled(backendsv1alpha1.InvalidCertificateReason), hb), want: readsFailed,
		},
		"an invalid spec": {
			reason: backendsv1alpha1.InvalidSpecReason, steps: forKinds(stalled(backendsv1alpha1.InvalidSpecReason), allKinds...), want: readsFailed,
		},
		"a setting the runner cannot read": {
			reason: backendsv1alpha1.UnsupportedByRunnerReason, steps: forKinds(stalled(backendsv1alpha1.UnsupportedByRunnerReason), hb, cb), want: readsFailed,
		},
		"no region": {
			reason: backendsv1alpha1.RegionMissingReason, steps: forKinds(stalled(backendsv1alpha1.RegionMissingReason), cb), want: readsFailed,
		},
		"a rendered name taken by a foreign object": {
			reason: backendsv1alpha1.NameConflictReason, steps: forKinds(stalled(backendsv1alpha1.NameConflictReason), hb, cb, rs), want: readsFailed,
		},
		"a rendered object changed by another writer": {
			reason: backendsv1alpha1.ExternallyModifiedReason, steps: forKinds(stalled(backendsv1alpha1.ExternallyModifiedReason), hb, cb, rs), want: readsFailed,
		},
		"a rendered object the API server refuses": {
			reason: backendsv1alpha1.WriteRejectedReason, steps: forKinds(stalled(backendsv1alpha1.WriteRejectedReason), hb, cb, rs), want: readsFailed,
		},
		"a render the namespace's API storage share cannot hold": {
			reason: backendsv1alpha1.BudgetExceededReason, steps: forKinds(stalled(backendsv1alpha1.BudgetExceededReason), hb, cb), want: readsFailed,
		},
		"a passphrase OpenTofu refuses": {
			reason: backendsv1alpha1.InvalidPassphraseReason, steps: forKinds(stalled(backendsv1alpha1.InvalidPassphraseReason), hb, cb), want: readsFailed,
		},
		"a reference the policy does not allow": {
			reason: backendsv1alpha1.ReferenceNotAllowedReason, steps: forKinds(stalled(backendsv1alpha1.ReferenceNotAllowedReason), hb, cb), want: readsFailed,
		},
		"a backend of another namespace that no OutputGrant there grants": {
			reason: backendsv1alpha1.ReferenceNotGrantedReason, steps: forKinds(stalled(backendsv1alpha1.ReferenceNotGrantedReason), rs), want: readsFailed,
		},
		"a grant naming a namespace the manager does not watch": {
			reason: backendsv1alpha1.NamespaceNotWatchedReason,
			steps:  forKinds(granting([]string{"health", "team-b"}, nil, backendsv1alpha1.GrantConsumer{Namespace: "team-c"}), og), want: readsRetrying,
		},
		"a grant with a selector, while the manager may not watch namespaces": {
			reason: backendsv1alpha1.NamespaceNotWatchedReason,
			steps: forKinds(granting([]string{"health"}, fmt.Errorf("%w: %w", nslabels.ErrUnknown, nslabels.ErrNotAllowed),
				backendsv1alpha1.GrantConsumer{NamespaceSelector: &metav1.LabelSelector{}}), og),
			want: readsRetrying,
		},
		"the backend does not exist": {
			reason: backendsv1alpha1.BackendNotFoundReason, steps: forKinds(stalled(backendsv1alpha1.BackendNotFoundReason), rs, sl, sh, sr), want: readsFailed,
		},
		"the backend is on another shard": {
			reason: backendsv1alpha1.ReferenceOnOtherShardReason, steps: forKinds(stalled(backendsv1alpha1.ReferenceOnOtherShardReason), rs, sl, sh, sr), want: readsFailed,
		},
		"the backend is stalled": {
			reason: backendsv1alpha1.BackendNotReadyReason, steps: forKinds(stalled(backendsv1alpha1.BackendNotReadyReason), rs, sl, sh, sr), want: readsFailed,
		},
		"no OutputGrant grants the backend of another namespace": {
			reason: backendsv1alpha1.ReferenceNotGrantedReason, steps: forKinds(stalled(backendsv1alpha1.ReferenceNotGrantedReason), rs), want: readsFailed,
		},
		"the manager does not watch the backend's namespace": {
			reason: backendsv1alpha1.NamespaceNotWatchedReason, steps: forKinds(stalled(backendsv1alpha1.NamespaceNotWatchedReason), rs), want: readsFailed,
		},
		"the backend has no lock address": {
			reason: backendsv1alpha1.LockingDisabledReason, steps: forKinds(stalled(backendsv1alpha1.LockingDisabledReason), sl, sr), want: readsFailed,
		},
		"the backend cannot be locked: the only credentials are a role to assume": {
			reason: backendsv1alpha1.AssumeRoleNotSupportedReason, steps: forKinds(stalled(backendsv1alpha1.AssumeRoleNotSupportedReason), sl, sr), want: readsFailed,
		},

		// A probe or a read failed: retried at the next interval.
		"the credentials are required": {
			reason: backendsv1alpha1.UnauthorizedReason, in: "probe",
			steps: withKinds(forKinds(observed(probeFailure(everyKindsFailures, status(401))), hb, rs), sourceFailed(status(401)), sh, sr), want: readsRetrying,
		},
		"the credentials are refused": {
			reason: backendsv1alpha1.ForbiddenReason, in: "probe",
			steps: withKinds(forKinds(observed(probeFailure(everyKindsFailures, status(403))), hb, rs), sourceFailed(status(403)), sh, sr), want: readsRetrying,
		},
		"the TLS handshake fails": {
			reason: backendsv1alpha1.TLSErrorReason, in: "probe",
			steps: withKinds(forKinds(observed(probeFailure(everyKindsFailures, untrusted)), hb, rs), sourceFailed(untrusted), sh, sr), want: readsRetrying,
		},
		"the address policy refuses the backend's address": {
			reason: backendsv1alpha1.AddressDeniedReason,
			steps: map[string]healthStep{
				hb: observed(probeFailure(everyKindsFailures, denied)), cb: observed(bucketObservation("b", cosErr(denied))), rs: observed(probeFailure(everyKindsFailures, denied)),
				sh: sourceFailed(denied), sr: sourceFailed(denied),
			},
			want: readsRetrying,
		},
		"the backend cannot be reached": {
			reason: backendsv1alpha1.UnreachableReason,
			steps: map[string]healthStep{
				hb: observed(probeFailure(everyKindsFailures, refused)), cb: observed(bucketObservation("b", cosErr(cos.ErrUnreachable))), rs: observed(probeFailure(everyKindsFailures, refused)),
				sh: sourceFailed(refused), sr: sourceFailed(refused),
			},
			want: readsRetrying,
		},
		"the backend answers with an error": {
			reason: backendsv1alpha1.ServerErrorReason,
			steps: map[string]healthStep{
				hb: observed(probeFailure(everyKindsFailures, status(500))), cb: observed(bucketObservation("b", cosErr(errors.New("HTTP 500")))), rs: observed(probeFailure(everyKindsFailures, status(500))),
				sh: sourceFailed(status(500)), sr: sourceFailed(status(500)),
			},
			want: readsRetrying,
		},
		"the bucket does not exist": {
			reason: backendsv1alpha1.BucketNotFoundReason,
			steps: map[string]healthStep{
				cb: observed(bucketObservation("b", cosErr(cos.ErrBucketNotFound))), rs: observed(probeFailure(everyKindsFailures, cosErr(cos.ErrBucketNotFound))),
				sh: sourceFailed(cosErr(cos.ErrBucketNotFound)), sr: sourceFailed(cosErr(cos.ErrBucketNotFound)),
			},
			want: readsRetrying,
		},
		"COS refuses the credentials": {
			reason: backendsv1alpha1.AccessDeniedReason,
			steps: map[string]healthStep{
				cb: observed(bucketObservation("b", cosErr(cos.ErrAccessDenied))), rs: observed(probeFailure(everyKindsFailures, cosErr(cos.ErrAccessDenied))),
				sh: sourceFailed(cosErr(cos.ErrAccessDenied)), sr: sourceFailed(cosErr(cos.ErrAccessDenied)),
			},
			want: readsRetrying,
		},
		"the state cannot be decrypted": {
			reason: backendsv1alpha1.DecryptionFailedReason,
			steps: map[string]healthStep{
				hb: observed(probeFailure(everyKindsFailures, undecryptable)), cb: cosProbed(cosProbeResult{stateErr: undecryptable}), rs: observed(contentFailure(undecryptable)),
			},
			want: readsRetrying,
		},
		"a key derivation refused by the key derivation CPU budget": {
			reason: backendsv1alpha1.BudgetExceededReason,
			steps: map[string]healthStep{
				hb: observed(probeFailure(everyKindsFailures, refusedDerivation)), cb: cosProbed(cosProbeResult{stateErr: refusedDerivation}),
				rs: observed(contentFailure(refusedDerivation)),
			},
			want: readsRetrying,
		},
		"the state cannot be used": {
			reason: backendsv1alpha1.StateUnreadableReason,
			steps: map[string]healthStep{
				hb: observed(probeFailure(everyKindsFailures, malformed)), cb: cosProbed(cosProbeResult{stateErr: malformed}), rs: observed(probeFailure(everyKindsFailures, cos.ErrChecksumMismatch)),
				// A state with no serial or lineage to key a snapshot by.
				sh: historyDid(historyRead{taken: history.Taken{Found: true}, err: &history.StageError{Stage: history.StageContent, Err: malformed}}),
			},
			want: readsRetrying,
		},
		"the state is not encrypted, as spec.encryption requires": {
			reason: backendsv1alpha1.StateNotEncryptedReason, in: "probe",
			steps: forKinds(func(t *testing.T, kind string, k healthKind, obj statusObject) (conditions.Outcome, error) {
				t.Helper()
				obs, ok := unencryptedState(encrypted, &backendsv1alpha1.StateSummary{Present: true, Serial: 2})
				if !ok {
					t.Fatal("unencryptedState accepts an unencrypted state under spec.encryption")
				}
				return observed(obs)(t, kind, k, obj)
			}, hb, cb),
			want: readsRetrying,
		},
		"the state is encrypted and the backend sets no spec.encryption": {
			reason: backendsv1alpha1.StateEncryptedReason, steps: forKinds(observed(contentFailure(statefile.ErrEncrypted)), rs), want: readsRetrying,
		},
		"the backend holds no state": {
			reason: backendsv1alpha1.StateNotFoundReason,
			steps: forKinds(func(t *testing.T, kind string, k healthKind, obj statusObject) (conditions.Outcome, error) {
				t.Helper()
				obs, err := (&remoteStateReconciler{}).publish(t.Context(), obj.(*backendsv1alpha1.RemoteState), remoteRead{}, nil)
				if err != nil {
					t.Fatal(err)
				}
				return observed(obs)(t, kind, k, obj)
			}, rs),
			want: readsRetrying,
		},
		"a selected output is missing": {
			reason: backendsv1alpha1.OutputMissingReason,
			steps:  forKinds(observed(contentFailure(&outputs.MissingError{Name: "vpc_id"})), rs), want: readsRetrying,
		},
		"a selected output has another type": {
			reason: backendsv1alpha1.OutputTypeMismatchReason,
			steps:  forKinds(observed(contentFailure(&outputs.TypeMismatchError{Name: "vpc_id", Want: "number", Got: "string"})), rs), want: readsRetrying,
		},
		"an output's key is no valid key": {
			reason: backendsv1alpha1.OutputKeyInvalidReason,
			steps:  forKinds(observed(contentFailure(&outputs.KeyError{Name: "..", Key: ".."})), rs), want: readsRetrying,
		},
		// Published again at the next read, if they fit by then.
		"outputs the namespace's API storage share cannot hold": {
			reason: backendsv1alpha1.BudgetExceededReason, in: "probe",
			steps: forKinds(func(t *testing.T, kind string, k healthKind, obj statusObject) (conditions.Outcome, error) {
				t.Helper()
				obs, ok := budgetObservation(conditions.Stall(backendsv1alpha1.BudgetExceededReason, "Secret a-outputs and ConfigMap a-outputs were not written"))
				if !ok {
					t.Fatal("budgetObservation does not take a BudgetExceeded stall")
				}
				return observed(obs)(t, kind, k, obj)
			}, rs),
			want: readsRetrying,
		},
		"the outputs do not fit": {
			reason: backendsv1alpha1.OutputsTooLargeReason, steps: forKinds(observed(contentFailure(outputs.ErrTooLarge)), rs), want: readsRetrying,
		},
		"a selected output is sensitive, and granted as a plain one only": {
			reason: backendsv1alpha1.ReferenceNotGrantedReason, in: "probe",
			steps: forKinds(observed(contentFailure(&outputs.NotGrantedError{Names: []string{"db_password"}})), rs), want: readsRetrying,
		},
		// Questionable: the same reason as the InvalidSpec stall, but
		// read as a failed read rather than as failed.
		"a default the selection cannot publish": {
			reason: backendsv1alpha1.InvalidSpecReason, in: "probe", steps: forKinds(observed(contentFailure(outputs.ErrInvalidDefault)), rs), want: readsRetrying,
		},

		// The probe stopped on an internal error: Ready Unknown.
		"the probe panicked": {
			reason: backendsv1alpha1.ProbeFailedReason,
			steps: forKinds(observed(conditions.Observation{Status: metav1.ConditionUnknown, Reason: backendsv1alpha1.ProbeFailedReason,
				Message: "The probe stopped on an internal error of the operator"}), probedKinds...),
			want: readsProgressing,
		},

		// A backend's lock, informational: it never changes the health.
		"no lock is held": {
			reason: backendsv1alpha1.NotLockedReason, in: backendsv1alpha1.LockedCondition,
			steps: forKinds(lockRead(lockStatus(lockReading{}, terms)), hb, cb), want: readsCurrent,
		},
		"a lock is held": {
			reason: backendsv1alpha1.LockHeldReason, in: backendsv1alpha1.LockedCondition,
			steps: forKinds(lockRead(lockStatus(lockReading{held: true, holder: holder}, terms)), hb, cb), want: readsCurrent,
		},
		"a lock is held past lockPolicy.staleAfter": {
			reason: backendsv1alpha1.StaleLockReason, in: backendsv1alpha1.LockedCondition,
			steps: forKinds(lockRead(lockStatus(lockReading{held: true, holder: holder}, lockTerms{now: now, staleAfter: time.Hour})), hb, cb),
			want:  readsCurrent,
		},
		"forceUnlock names another lock": {
			reason: backendsv1alpha1.ForceUnlockSkippedReason, in: backendsv1alpha1.LockedCondition,
			steps: forKinds(lockRead(lockStatus(lockReading{held: true, holder: holder}, lockTerms{now: now, forceUnlockID: "other"})), hb, cb),
			want:  readsCurrent,
		},
		"forceUnlock released the lock": {
			reason: backendsv1alpha1.ForceUnlockedReason, in: backendsv1alpha1.LockedCondition,
			steps: forKinds(lockRead(lockStatus(lockReading{released: true, holder: holder}, lockTerms{now: now, forceUnlockID: "l1"})), hb, cb),
			want:  readsCurrent,
		},
		"the server refused every way of releasing the lock": {
			reason: backendsv1alpha1.ForceUnlockRefusedReason, in: backendsv1alpha1.LockedCondition,
			steps: forKinds(lockRead(lockStatus(lockReading{held: true, holder: holder, releaseErr: &forceUnlockRefusedError{body: conformance.BodyID, status: 400}},
				lockTerms{now: now, forceUnlockID: "l1"})), hb, cb),
			want: readsCurrent,
		},
		"the lock of a gone holder was released": {
			reason: backendsv1alpha1.HolderGoneReleasedReason, in: backendsv1alpha1.LockedCondition,
			steps: forKinds(lockRead(lockStatus(lockReading{released: true, goneRelease: true, holder: holder,
				sighting: holderSighting{pod: &backendsv1alpha1.HolderPod{Name: "runner", Phase: "Succeeded", GoneSince: past}}},
				lockTerms{now: now, grace: time.Minute})), hb, cb),
			want: readsCurrent,
		},
		"the lock check could not release the lock": {
			reason: backendsv1alpha1.LockCheckNotReleasedReason, in: backendsv1alpha1.LockedCondition,
			steps: forKinds(lockRead(lockStatus(lockReading{held: true, holder: holder, ownErr: status(500)}, terms)), hb), want: readsCurrent,
		},
		"the lock cannot be read": {
			reason: backendsv1alpha1.UnreachableReason, in: backendsv1alpha1.LockedCondition,
			steps: forKinds(lockRead(lockStatus(lockReading{err: context.DeadlineExceeded}, terms)), hb, cb), want: readsCurrent,
		},
		"forceUnlock is not possible on this server": {
			reason: backendsv1alpha1.ForceUnlockUnsupportedReason, in: backendsv1alpha1.LockedCondition,
			steps: forKinds(lockRead(lockStatus(lockReading{held: true, named: "l1",
				releaseErr: &forceUnlockUnsupportedError{plan: conformance.NamedUnlockPlan{Reason: "the server ignores UNLOCK bodies"}}},
				lockTerms{now: now, forceUnlockID: "l1"})), hb),
			want: readsCurrent,
		},
		"the server does not lock": {
			reason: backendsv1alpha1.LockingUnsupportedReason, in: backendsv1alpha1.LockedCondition,
			steps: forKinds(lockRead(lockStatus(checkHTTPLock(context.Background(), nil, httpProbeRun{}, conformance.Decide(conformance.Behaviour{})), terms)), hb),
			want:  readsCurrent,
		},
		"a StateLock's or a StateRestore's backend does not lock": {
			reason: backendsv1alpha1.LockingUnsupportedReason, steps: forKinds(stalled(backendsv1alpha1.LockingUnsupportedReason), sl, sr), want: readsFailed,
		},
		"the lock is not checked": {
			reason: backendsv1alpha1.LockNotCheckedReason, in: backendsv1alpha1.LockedCondition,
			steps: forKinds(lockRead(uncheckedLockVerdict(nil, "set probe.lockCheck")), hb, cb), want: readsCurrent,
		},

		// A backend whose deletion waits for the StateLocks that hold its
		// lock: GitOps tools read any object being deleted as such.
		"the deletion waits for a StateLock": {
			reason: backendsv1alpha1.InUseReason,
			steps:  forKinds(probeSucceeded(), hb, cb),
			then: func(obj statusObject) {
				obj.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
				blocker := backendsv1alpha1.StateLock{ObjectMeta: metav1.ObjectMeta{Name: "freeze", Namespace: obj.GetNamespace()},
					Status: backendsv1alpha1.StateLockStatus{LockID: "l1"}}
				conditions.Set(obj.StatusConditions(), obj.GetGeneration(), backendsv1alpha1.ReadyCondition, inUseObservation([]backendsv1alpha1.StateLock{blocker}))
			},
			want: health{kstatus.TerminatingStatus, kstatus.InProgressStatus, "Progressing"},
		},

		// A StateLock's lock.
		"the StateLock holds its lock": {
			reason: backendsv1alpha1.LockAcquiredReason, steps: forKinds(probeSucceeded(), sl), want: readsCurrent,
		},
		"another holds the lock the StateLock waits for": {
			reason: backendsv1alpha1.WaitingForLockReason,
			steps:  forKinds(stateLockDid("", nil, slockResult{action: slockHold, holder: holder}), sl), want: readsProgressing,
		},
		"the StateLock lost its lock": {
			reason: backendsv1alpha1.LockLostReason,
			steps:  forKinds(stateLockDid("l1", nil, slockResult{action: slockHold, holder: &backendsv1alpha1.LockInfo{ID: "l2"}}), sl), want: readsFailed,
		},
		"the StateLock holds a lock the server cannot confirm": {
			reason: backendsv1alpha1.HolderNotReportedReason,
			steps:  forKinds(stateLockDid("l1", nil, slockResult{action: slockHold, unknown: true, why: "the server's conflict named no holder"}), sl),
			want:   readsCurrent,
		},
		"the StateLock expired and could not release its lock": {
			reason: backendsv1alpha1.LockNotReleasedReason,
			steps:  forKinds(stateLockDid("l1", past, slockResult{action: slockRelease, withheld: "the server refused its UNLOCK (HTTP 409 Conflict)"}), sl),
			want:   readsFailed,
		},
		"the StateLock expired and released its lock": {
			reason: backendsv1alpha1.ExpiredReason,
			steps:  forKinds(stateLockDid("l1", past, slockResult{action: slockRelease, released: true}), sl), want: readsCurrent,
		},
		"the StateLock expired holding nothing": {
			reason: backendsv1alpha1.ExpiredReason,
			steps: forKinds(func(t *testing.T, kind string, k healthKind, obj statusObject) (conditions.Outcome, error) {
				t.Helper()
				lock := obj.(*backendsv1alpha1.StateLock)
				lock.Spec.Until = past
				return observed(expiredObservation(lock, "", "HttpBackend b"))(t, kind, k, obj)
			}, sl),
			want: readsCurrent,
		},
		"the StateLock cannot reach the backend": {
			reason: backendsv1alpha1.UnreachableReason,
			steps:  forKinds(stateLockDid("", nil, slockResult{action: slockHold, err: refused}), sl), want: readsProgressing,
		},
	}
	maps.Copy(cases, historyHealthCases(holder, cosErr))
	return cases
}
