package controllers

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// What a backend's spec.lockPolicy says of the lock a probe saw: its age,
// whether it is stale, and the grace period of a holder whose Pod is gone.
// The functions of this file are pure and table-tested; holderpod.go
// applies releaseWhenHolderGone.

// defaultHolderGoneGrace is lockPolicy.gracePeriod when unset. The CRD
// sets no default (a default would make every lockPolicy carry it), so
// the API's defaults test has no marker to check it against.
const defaultHolderGoneGrace = 5 * time.Minute

// lockTerms is what the Locked condition is decided against besides the
// reading: the spec, and the time the probe ended.
type lockTerms struct {
	// failures are the failure classes of the backend kind's client (see
	// classifyFailure), for a lock that cannot be read or released.
	failures []failureClass
	// forceUnlockID is the lock ID spec.forceUnlock names, "" when none.
	forceUnlockID string
	// staleAfter is lockPolicy.staleAfter; 0 reports no lock as stale.
	staleAfter time.Duration
	// grace is lockPolicy.gracePeriod in effect, for the messages of a
	// holder whose Pod is gone.
	grace time.Duration
	// now is when the probe ended: the lock's age is counted to it.
	now time.Time
}

// lockTermsOf are the terms of a spec's forceUnlock and lockPolicy for a
// probe that ended at now.
func lockTermsOf(forceUnlock *backendsv1alpha1.ForceUnlockSpec, policy *backendsv1alpha1.LockPolicy, now time.Time) lockTerms {
	t := lockTerms{forceUnlockID: forceUnlockID(forceUnlock), grace: gracePeriod(policy), now: now}
	if policy != nil && policy.StaleAfter != nil {
		t.staleAfter = policy.StaleAfter.Duration
	}
	return t
}

// gracePeriod is the lockPolicy.gracePeriod in effect.
func gracePeriod(policy *backendsv1alpha1.LockPolicy) time.Duration {
	if policy == nil || policy.GracePeriod == nil {
		return defaultHolderGoneGrace
	}
	return policy.GracePeriod.Duration
}

// releasesGoneHolders reports whether policy releases the locks of
// holders whose Pod is gone.
func releasesGoneHolders(policy *backendsv1alpha1.LockPolicy) bool {
	return policy != nil && policy.ReleaseWhenHolderGone
}

// lockAgeBuckets are the ages a Locked message says a lock has passed,
// longest first: on a log scale, so that the message (and with it the
// status) changes a few times over a lock's life, not at every probe.
var lockAgeBuckets = []struct {
	age   time.Duration
	label string
}{
	{365 * 24 * time.Hour, "1y"},
	{30 * 24 * time.Hour, "30d"},
	{7 * 24 * time.Hour, "7d"},
	{24 * time.Hour, "1d"},
	{6 * time.Hour, "6h"},
	{time.Hour, "1h"},
	{15 * time.Minute, "15m"},
	{5 * time.Minute, "5m"},
	{time.Minute, "1m"},
}

// lockAge is the sentence of the Locked message that says how long the
// lock has been held at now, coarsely (see lockAgeBuckets), from its
// holder's Created; a stale lock (see staleLock) says so.
func lockAge(created *metav1.Time, now time.Time, staleAfter time.Duration) string {
	if created == nil {
		return " Its holder did not record when it took the lock, so its age is unknown."
	}
	age := now.Sub(created.Time)
	if age < 0 {
		return " Its holder recorded a Created later than the operator's clock, so its age is unknown."
	}
	held := "less than 1m"
	for _, b := range lockAgeBuckets {
		if age >= b.age {
			held = "over " + b.label
			break
		}
	}
	if staleLock(created, now, staleAfter) {
		return fmt.Sprintf(" It has been held for %s, longer than lockPolicy.staleAfter (%s).", held, staleAfter)
	}
	return fmt.Sprintf(" It has been held for %s.", held)
}

// staleLock reports whether a lock taken at created has been held longer
// than staleAfter at now. A lock whose holder did not record Created is
// never stale, and a staleAfter of 0 reports no lock as stale.
func staleLock(created *metav1.Time, now time.Time, staleAfter time.Duration) bool {
	return staleAfter > 0 && created != nil && now.Sub(created.Time) > staleAfter
}

// forceUnlockID is the lock ID a backend's spec.forceUnlock names, or "".
func forceUnlockID(f *backendsv1alpha1.ForceUnlockSpec) string {
	if f == nil {
		return ""
	}
	return f.LockID
}
