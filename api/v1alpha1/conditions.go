package v1alpha1

// Condition types. Ready, Reconciling and Stalled follow kstatus so that
// kubectl wait, Flux and Argo CD understand every kind of this API.
const (
	// ReadyCondition summarises the object: True when the backend is
	// rendered and, where probing is enabled, reachable.
	ReadyCondition = "Ready"

	// ReconcilingCondition is True while the controller works towards the
	// desired state and the outcome is not yet known.
	ReconcilingCondition = "Reconciling"

	// StalledCondition is True when the controller cannot make progress
	// until the user changes the spec or a referenced object.
	StalledCondition = "Stalled"

	// StateReachableCondition reports whether the HttpBackend's address
	// answers state requests with the configured credentials.
	StateReachableCondition = "StateReachable"

	// BucketReadyCondition reports whether the CosBackend's bucket exists
	// and can be read with the configured credentials.
	BucketReadyCondition = "BucketReady"

	// OutputsReadyCondition reports whether a RemoteState read the state
	// and published the outputs it selects.
	OutputsReadyCondition = "OutputsReady"

	// LockedCondition is informational: True while a state lock is held.
	// It never makes Ready False.
	LockedCondition = "Locked"

	// SnapshotsReadyCondition reports whether a StateHistory keeps the
	// newest state it read in its destination.
	SnapshotsReadyCondition = "SnapshotsReady"

	// RestoredCondition reports whether a StateRestore wrote its snapshot,
	// and otherwise what it waits for or why it was refused.
	RestoredCondition = "Restored"
)

// Condition reasons.
const (
	// ProgressingReason means the controller is working on a new generation.
	ProgressingReason = "Progressing"

	// SucceededReason means the last reconciliation succeeded.
	SucceededReason = "Succeeded"

	// SecretNotFoundReason means a referenced Secret does not exist.
	SecretNotFoundReason = "SecretNotFound"

	// SecretKeyMissingReason means a referenced Secret lacks the key.
	SecretKeyMissingReason = "SecretKeyMissing"

	// ConfigMapNotFoundReason means a referenced ConfigMap does not exist.
	ConfigMapNotFoundReason = "ConfigMapNotFound"

	// ConfigMapKeyMissingReason means a referenced ConfigMap lacks the key.
	ConfigMapKeyMissingReason = "ConfigMapKeyMissing"

	// InvalidCertificateReason means a PEM does not parse, a certificate
	// and key do not match, or a CA bundle holds no certificate.
	InvalidCertificateReason = "InvalidCertificate"

	// InvalidSpecReason means the spec is invalid in a way admission
	// validation cannot express.
	InvalidSpecReason = "InvalidSpec"

	// UnsupportedByRunnerReason means spec.runner names a runner (flavor
	// and version) that cannot read a setting the spec renders; the
	// message names each setting.
	UnsupportedByRunnerReason = "UnsupportedByRunner"

	// RegionMissingReason means a CosBackend has no region and the manager
	// has no default region.
	RegionMissingReason = "RegionMissing"

	// NameConflictReason means the ConfigMap or Secret to render exists and
	// belongs to something else, so the controller leaves it alone.
	NameConflictReason = "NameConflict"

	// ExternallyModifiedReason means another writer changed a ConfigMap or
	// Secret the operator renders, so the operator stopped writing it
	// rather than fight over it.
	ExternallyModifiedReason = "ExternallyModified"

	// WriteRejectedReason means the API server refused to store an object
	// the operator wrote (invalid or too large); the same write would be
	// refused again.
	WriteRejectedReason = "WriteRejected"

	// StatusRejectedReason means the API server refused the status the
	// operator computed; the status keeps its previous observations.
	StatusRejectedReason = "StatusRejected"

	// OutputKeyInvalidReason means an output cannot be published: its name
	// or key is not a valid ConfigMap or Secret key.
	OutputKeyInvalidReason = "OutputKeyInvalid"

	// ReconcileErrorReason means a transient error interrupted the
	// reconciliation; it is retried with backoff.
	ReconcileErrorReason = "ReconcileError"

	// InvalidPassphraseReason means spec.encryption references a
	// passphrase OpenTofu refuses (shorter than 16 bytes), or would read
	// as other bytes (not UTF-8 text in Unicode normalization form C).
	InvalidPassphraseReason = "InvalidPassphrase"

	// DecryptionFailedReason means the state is encrypted and the
	// passphrases of spec.encryption cannot decrypt it.
	DecryptionFailedReason = "DecryptionFailed"

	// StateNotEncryptedReason means spec.encryption does not accept
	// unencrypted state (no fallback.unencrypted) and the state is not
	// encrypted: OpenTofu will refuse to read it.
	StateNotEncryptedReason = "StateNotEncrypted"

	// StateEncryptedReason means a RemoteState's state is encrypted and
	// its backend sets no spec.encryption to decrypt it with.
	StateEncryptedReason = "StateEncrypted"

	// ReferenceNotGrantedReason means a RemoteState names a backend of
	// another namespace that no OutputGrant of that namespace grants to
	// the RemoteState's namespace (for its workspace), or an output the
	// grants do not cover. The message is the same whether or not the
	// backend exists.
	ReferenceNotGrantedReason = "ReferenceNotGranted"

	// NamespaceNotWatchedReason means an OutputGrant names a consumer
	// namespace, or lives in one, that the manager does not watch
	// (--watch-namespaces): the grant cannot serve it. Also when it has
	// a namespace selector and the manager may not list and watch
	// namespaces, so that no selector matches.
	NamespaceNotWatchedReason = "NamespaceNotWatched"

	// BudgetExceededReason means a read, a write or a key derivation was
	// refused because the namespace used its share of one of the
	// manager's budgets (or all namespaces the total); the message names
	// the budget and its flag. It clears by itself once the use drains.
	BudgetExceededReason = "BudgetExceeded"

	// StateUnreadableReason means the state object exists but cannot be
	// used: its checksum is missing or wrong, it is too large, or it does
	// not parse.
	StateUnreadableReason = "StateUnreadable"

	// ReachableReason means the last probe succeeded.
	ReachableReason = "Reachable"

	// UnauthorizedReason means the backend answered 401.
	UnauthorizedReason = "Unauthorized"

	// ForbiddenReason means the backend answered 403.
	ForbiddenReason = "Forbidden"

	// TLSErrorReason means the TLS handshake with the backend failed.
	TLSErrorReason = "TLSError"

	// AddressDeniedReason means the manager's address policy refuses every
	// address the backend's host resolves to (link-local and cloud
	// metadata addresses by default; --allowed-address-cidrs and
	// --denied-address-cidrs).
	AddressDeniedReason = "AddressDenied"

	// UnreachableReason means the backend could not be reached.
	UnreachableReason = "Unreachable"

	// ServerErrorReason means the backend answered with an unexpected status.
	ServerErrorReason = "ServerError"

	// ProbeFailedReason means a probe stopped on an internal error of the
	// operator; the manager's log has the details.
	ProbeFailedReason = "ProbeFailed"

	// ProbeDisabledReason means probe.interval is 0s.
	ProbeDisabledReason = "ProbeDisabled"

	// BucketNotFoundReason means the COS bucket does not exist.
	BucketNotFoundReason = "BucketNotFound"

	// AccessDeniedReason means COS refused the credentials.
	AccessDeniedReason = "AccessDenied"

	// LockHeldReason means a lock holder was seen.
	LockHeldReason = "LockHeld"

	// NotLockedReason means no lock holder was seen.
	NotLockedReason = "NotLocked"

	// ForceUnlockedReason means the controller released the lock named by
	// forceUnlock.lockID.
	ForceUnlockedReason = "ForceUnlocked"

	// BackendNotFoundReason means a RemoteState's backendRef names no
	// backend.
	BackendNotFoundReason = "BackendNotFound"

	// BackendNotReadyReason means the referenced backend is stalled, so its
	// settings cannot be used.
	BackendNotReadyReason = "BackendNotReady"

	// StateNotFoundReason means the backend holds no state for the
	// workspace: terraform_remote_state fails the same way.
	StateNotFoundReason = "StateNotFound"

	// OutputMissingReason means a selected output is in neither the state
	// nor the defaults.
	OutputMissingReason = "OutputMissing"

	// OutputTypeMismatchReason means a selected output has another type
	// than the one asked for.
	OutputTypeMismatchReason = "OutputTypeMismatch"

	// OutputsPublishedReason means the outputs were read and published.
	OutputsPublishedReason = "OutputsPublished"

	// ReferenceNotAllowedReason means a referenced Secret or ConfigMap
	// lacks the AllowReferenceLabel that the manager's
	// --secret-reference-policy=labeled requires.
	ReferenceNotAllowedReason = "ReferenceNotAllowed"

	// OutputsTooLargeReason means the outputs a RemoteState would publish
	// do not fit a ConfigMap or a Secret, or are too many to read.
	OutputsTooLargeReason = "OutputsTooLarge"

	// ForceUnlockSkippedReason means the state is locked, but
	// forceUnlock.lockID does not name the current holder, so the
	// controller left the lock alone.
	ForceUnlockSkippedReason = "ForceUnlockSkipped"

	// ForceUnlockRefusedReason means forceUnlock.lockID names the holder,
	// but the server refused every way of releasing it; the lock is still
	// held, and the controller tries again at the next probe.
	ForceUnlockRefusedReason = "ForceUnlockRefused"

	// LockCheckNotReleasedReason means the lock check took the lock and
	// could not release it: the operator itself holds the lock until its
	// next probe releases it.
	LockCheckNotReleasedReason = "LockCheckNotReleased"

	// AssumeRoleNotSupportedReason means a CosBackend's only credentials
	// are an assumed role, which the controller does not assume (it makes
	// no STS call), so its probe cannot read the bucket.
	AssumeRoleNotSupportedReason = "AssumeRoleNotSupported"

	// StaleLockReason means the lock has been held longer than the
	// backend's lockPolicy.staleAfter.
	StaleLockReason = "StaleLock"

	// HolderGoneReleasedReason means the controller released a lock whose
	// holder's Pod was gone or finished for the backend's
	// lockPolicy.gracePeriod.
	HolderGoneReleasedReason = "HolderGoneReleased"

	// LockAcquiredReason means a StateLock holds its lock.
	LockAcquiredReason = "LockAcquired"

	// WaitingForLockReason means another holds the lock a StateLock wants:
	// it takes the lock as soon as it is free, never by force.
	WaitingForLockReason = "WaitingForLock"

	// LockLostReason means a StateLock no longer holds the lock it took:
	// it was released or taken by someone else (a force unlock). The
	// StateLock does not take it again until its spec changes or its
	// backends.infrastate.io/reacquire annotation gets a new value.
	LockLostReason = "LockLost"

	// ExpiredReason means a StateLock's spec.until has passed: its lock
	// was released.
	ExpiredReason = "Expired"

	// LockingDisabledReason means a StateLock's HttpBackend has no
	// lockAddress or unlockAddress, so its state cannot be locked.
	LockingDisabledReason = "LockingDisabled"

	// LockNotReleasedReason means a StateLock was deleted, but its lock
	// could not be released within the bounded wait (its backend, its
	// Secret or its server was gone): the lock may still be held.
	LockNotReleasedReason = "LockNotReleased"

	// LockReleasedReason means a StateLock released its lock.
	LockReleasedReason = "LockReleased"

	// LockNotCheckedReason means the operator does not read a backend's
	// lock (an HttpBackend without probe.lockCheck, or probing turned off)
	// and no StateLock of its own holds it: whether it is held is not
	// known. status.locked reads Unchecked.
	LockNotCheckedReason = "LockNotChecked"

	// HolderNotReportedReason means the state server's conflicts name no holder
	// and nothing else tells whose the lock is: a StateLock cannot check
	// that it still holds its lock, and keeps it as held.
	HolderNotReportedReason = "HolderNotReported"

	// LockingUnsupportedReason means the state server does not support
	// what a lock feature needs (it does not lock, or no UNLOCK body
	// releases a lock); the message says what it does.
	LockingUnsupportedReason = "LockingUnsupported"

	// ForceUnlockUnsupportedReason means forceUnlock (or the lockPolicy's
	// release of a gone holder) cannot release only the named lock on
	// this state server; the message says why and what terraform or tofu
	// force-unlock would do.
	ForceUnlockUnsupportedReason = "ForceUnlockUnsupported"

	// InUseReason means a backend being deleted waits for the StateLocks
	// that hold its lock to release it: deleting them (or their
	// spec.until passing) lets the deletion finish.
	InUseReason = "InUse"

	// SnapshotStoredReason means a StateHistory keeps the newest state it
	// read.
	SnapshotStoredReason = "SnapshotStored"

	// DestinationUnreachableReason means a StateHistory's destination did
	// not answer.
	DestinationUnreachableReason = "DestinationUnreachable"

	// DestinationRefusedReason means a StateHistory's destination refused
	// its credentials or its requests (a missing bucket, access denied).
	DestinationRefusedReason = "DestinationRefused"

	// DestinationFullReason means a StateHistory's destination refuses new
	// objects (its bucket is full or over its quota), or its prefix holds
	// more objects than a history lists.
	DestinationFullReason = "DestinationFull"

	// PrefixInUseReason means another StateHistory of the namespace writes
	// to the same destination and prefix.
	PrefixInUseReason = "PrefixInUse"

	// RestoredReason means a StateRestore wrote its snapshot.
	RestoredReason = "Restored"

	// SnapshotNotFoundReason means the snapshot a StateRestore names is
	// not in its history's destination (never taken, or pruned).
	SnapshotNotFoundReason = "SnapshotNotFound"

	// SnapshotUnusableReason means the snapshot a StateRestore names was
	// read back but cannot be written forward (it holds no top-level
	// serial, or does not parse): the restore is refused.
	SnapshotUnusableReason = "SnapshotUnusable"

	// LineageMismatchReason means the snapshot a StateRestore names is of
	// another lineage than the source's state, and spec.allowLineageChange
	// is not set.
	LineageMismatchReason = "LineageMismatch"

	// HistoryNotFoundReason means a StateRestore's historyRef names no
	// StateHistory.
	HistoryNotFoundReason = "HistoryNotFound"

	// ReferenceOnOtherShardReason means the object names a backend (or a
	// StateHistory) that exists but is held by another shard than the
	// object's own: its manager's label selector (--watch-label-selector)
	// leaves it out, so it cannot read it. Both must carry the same
	// sharding.fluxcd.io/key label.
	ReferenceOnOtherShardReason = "ReferenceOnOtherShard"
)
