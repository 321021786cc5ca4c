package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers"
)

// What the shards scenario reads of the backends and StateLocks it moves,
// and what it counts as wrong with them while they move. The functions
// here are pure; objectViews (viewtracker.go) applies them to a watch.

// backendView is what the relabel reads of a backend.
type backendView struct {
	// Shard is its shard label.
	Shard string
	// Ready is Ready=True at its current generation; Reason is Ready's
	// reason.
	Ready  bool
	Reason string
	// Protected is true while it carries the protection finalizer a
	// StateLock needs.
	Protected bool
	// Locked is its Locked condition's status, "" without one.
	Locked string
}

// viewOfBackend reads b.
func viewOfBackend(b *backendsv1alpha1.HttpBackend) backendView {
	v := backendView{
		Shard: b.Labels[controllers.ShardLabel], Ready: isReady(b),
		Protected: controllerutil.ContainsFinalizer(b, backendsv1alpha1.BackendProtectionFinalizer),
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, backendsv1alpha1.ReadyCondition); c != nil {
		v.Reason = c.Reason
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, backendsv1alpha1.LockedCondition); c != nil {
		v.Locked = string(c.Status)
	}
	return v
}

// lockedBackendAnomalies says what is wrong with a backend whose lock a
// StateLock holds: not Ready, not protected, its lock not seen held.
func lockedBackendAnomalies(v backendView) []string {
	var out []string
	if !v.Ready {
		out = append(out, "backend not Ready ("+reasonOrNone(v.Reason)+")")
	}
	if !v.Protected {
		out = append(out, "backend without "+backendsv1alpha1.BackendProtectionFinalizer)
	}
	if v.Locked != string(metav1.ConditionTrue) {
		out = append(out, "backend Locked "+reasonOrNone(v.Locked))
	}
	return out
}

// stateLockView is what the relabel reads of a StateLock.
type stateLockView struct {
	// Shard is its shard label.
	Shard string
	// LockID is status.lockID.
	LockID string
	// Ready is Ready=True at its current generation; Reason is Ready's
	// reason.
	Ready  bool
	Reason string
	// Lost is true when one of its conditions has reason LockLost.
	Lost bool
}

// viewOfStateLock reads sl.
func viewOfStateLock(sl *backendsv1alpha1.StateLock) stateLockView {
	v := stateLockView{Shard: sl.Labels[controllers.ShardLabel], LockID: sl.Status.LockID}
	if c := meta.FindStatusCondition(sl.Status.Conditions, backendsv1alpha1.ReadyCondition); c != nil {
		v.Reason = c.Reason
		v.Ready = c.Status == metav1.ConditionTrue && sl.Status.ObservedGeneration == sl.Generation
	}
	for _, c := range sl.Status.Conditions {
		if c.Reason == backendsv1alpha1.LockLostReason {
			v.Lost = true
		}
	}
	return v
}

// stateLockAnomalies says what is wrong with a StateLock that held the
// lock wantID: not Ready, LockLost, another lock ID.
func stateLockAnomalies(v stateLockView, wantID string) []string {
	var out []string
	if !v.Ready {
		out = append(out, "StateLock not Ready ("+reasonOrNone(v.Reason)+")")
	}
	if v.Lost {
		out = append(out, "StateLock "+backendsv1alpha1.LockLostReason)
	}
	if v.LockID != wantID {
		out = append(out, "StateLock lock ID changed")
	}
	return out
}

// reasonOrNone prints a reason, "none" when empty.
func reasonOrNone(r string) string {
	if r == "" {
		return "none"
	}
	return r
}

// sightings records, per anomaly, the objects it was seen on.
type sightings map[string]map[types.NamespacedName]bool

// add records the anomalies seen on key.
func (s sightings) add(key types.NamespacedName, anomalies []string) {
	for _, a := range anomalies {
		if s[a] == nil {
			s[a] = map[types.NamespacedName]bool{}
		}
		s[a][key] = true
	}
}

// merge adds what other saw.
func (s sightings) merge(other sightings) {
	for a, keys := range other {
		for key := range keys {
			s.add(key, []string{a})
		}
	}
}

// seen reports whether anomaly was seen on any object.
func (s sightings) seen(anomaly string) bool { return len(s[anomaly]) > 0 }

// String lists the anomalies with the number of objects each was seen
// on, sorted; "none" when nothing was seen.
func (s sightings) String() string {
	if len(s) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(s))
	for _, a := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, fmt.Sprintf("%s on %d", a, len(s[a])))
	}
	return strings.Join(parts, ", ")
}

// stateLocksReport is the outcome of checkStateLocks.
type stateLocksReport struct {
	// StateLocks is the number of StateLocks checked.
	StateLocks int
	// Missing are the StateLocks not seen; NotReady those not Ready;
	// Changed those whose lock ID changed; Lost those reporting LockLost;
	// Misplaced those not labelled for their shard. Each is sorted.
	Missing, NotReady, Changed, Lost, Misplaced []string
}

// checkStateLocks checks that each StateLock of want (its lock ID before
// the relabel) is Ready, still holds that lock, reports no LockLost and is
// labelled shard, as got (the views of the StateLocks seen) says.
func checkStateLocks(want map[types.NamespacedName]string, got map[types.NamespacedName]stateLockView, shard string) stateLocksReport {
	r := stateLocksReport{StateLocks: len(want)}
	for key, id := range want {
		v, ok := got[key]
		if !ok {
			r.Missing = append(r.Missing, key.String())
			continue
		}
		if !v.Ready {
			r.NotReady = append(r.NotReady, fmt.Sprintf("%s (%s)", key, reasonOrNone(v.Reason)))
		}
		if v.LockID != id {
			r.Changed = append(r.Changed, fmt.Sprintf("%s (%q, was %q)", key, v.LockID, id))
		}
		if v.Lost {
			r.Lost = append(r.Lost, key.String())
		}
		if v.Shard != shard {
			r.Misplaced = append(r.Misplaced, fmt.Sprintf("%s (shard %q)", key, v.Shard))
		}
	}
	for _, list := range []*[]string{&r.Missing, &r.NotReady, &r.Changed, &r.Lost, &r.Misplaced} {
		slices.Sort(*list)
	}
	return r
}

// ok reports whether every StateLock holds its lock as before.
func (r stateLocksReport) ok() bool {
	return len(r.Missing)+len(r.NotReady)+len(r.Changed)+len(r.Lost)+len(r.Misplaced) == 0
}

// String summarises the report in one line.
func (r stateLocksReport) String() string {
	return fmt.Sprintf("StateLocks %s: %d, %d missing, %d not Ready, %d with another lock ID, %d LockLost, %d on another shard",
		verdict(r.ok()), r.StateLocks, len(r.Missing), len(r.NotReady), len(r.Changed), len(r.Lost), len(r.Misplaced)) +
		offenders(r.Missing, r.NotReady, r.Changed, r.Lost, r.Misplaced)
}
