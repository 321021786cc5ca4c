package controllers

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// lockTaken is when the holders of the lock policy tests took their lock.
var lockTaken = time.Date(2030, time.January, 1, 12, 0, 0, 0, time.UTC)

func TestLockAge(t *testing.T) {
	created := new(metav1.NewTime(lockTaken))
	cases := map[string]struct {
		created    *metav1.Time
		age        time.Duration
		staleAfter time.Duration
		want       string
	}{
		"no Created":           {want: " Its holder did not record when it took the lock, so its age is unknown."},
		"Created ahead":        {created: created, age: -time.Second, want: " Its holder recorded a Created later than the operator's clock, so its age is unknown."},
		"just taken":           {created: created, want: " It has been held for less than 1m."},
		"59s":                  {created: created, age: 59 * time.Second, want: " It has been held for less than 1m."},
		"1m":                   {created: created, age: time.Minute, want: " It has been held for over 1m."},
		"4m59s":                {created: created, age: 5*time.Minute - time.Second, want: " It has been held for over 1m."},
		"5m":                   {created: created, age: 5 * time.Minute, want: " It has been held for over 5m."},
		"15m":                  {created: created, age: 15 * time.Minute, want: " It has been held for over 15m."},
		"59m":                  {created: created, age: 59 * time.Minute, want: " It has been held for over 15m."},
		"1h":                   {created: created, age: time.Hour, want: " It has been held for over 1h."},
		"6h":                   {created: created, age: 6 * time.Hour, want: " It has been held for over 6h."},
		"23h":                  {created: created, age: 23 * time.Hour, want: " It has been held for over 6h."},
		"1d":                   {created: created, age: 24 * time.Hour, want: " It has been held for over 1d."},
		"7d":                   {created: created, age: 7 * 24 * time.Hour, want: " It has been held for over 7d."},
		"30d":                  {created: created, age: 30 * 24 * time.Hour, want: " It has been held for over 30d."},
		"2y":                   {created: created, age: 2 * 365 * 24 * time.Hour, want: " It has been held for over 1y."},
		"stale":                {created: created, age: 2 * time.Hour, staleAfter: time.Hour, want: " It has been held for over 1h, longer than lockPolicy.staleAfter (1h0m0s)."},
		"exactly staleAfter":   {created: created, age: time.Hour, staleAfter: time.Hour, want: " It has been held for over 1h."},
		"no Created, stale on": {staleAfter: time.Minute, want: " Its holder did not record when it took the lock, so its age is unknown."},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, lockAge(tc.created, lockTaken.Add(tc.age), tc.staleAfter)); diff != "" {
				t.Errorf("lockAge (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLockAgeChangesRarely counts how often the Locked message of a lock
// held for a week changes when probed every minute: each change is a
// status write, and a lock held at rest must cost only a few.
func TestLockAgeChangesRarely(t *testing.T) {
	holder := &backendsv1alpha1.LockInfo{ID: "lock-1", Who: "bob@ci", Created: new(metav1.NewTime(lockTaken))}
	terms := lockTerms{staleAfter: 2 * time.Hour}
	var messages, reasons []string
	for age := time.Duration(0); age <= 7*24*time.Hour; age += time.Minute {
		terms.now = lockTaken.Add(age)
		v := lockStatus(lockReading{held: true, holder: holder}, terms)
		if n := len(messages); n == 0 || messages[n-1] != v.obs.Message {
			messages = append(messages, v.obs.Message)
			reasons = append(reasons, v.obs.Reason)
		}
	}
	want := []string{"LockHeld", "LockHeld", "LockHeld", "LockHeld", "LockHeld", "StaleLock", "StaleLock", "StaleLock", "StaleLock"}
	if diff := cmp.Diff(want, reasons); diff != "" {
		t.Errorf("reasons of the successive messages (-want +got):\n%s\nmessages:\n%s", diff, strings.Join(messages, "\n"))
	}
}

func TestStaleLock(t *testing.T) {
	created := new(metav1.NewTime(lockTaken))
	cases := map[string]struct {
		created    *metav1.Time
		age        time.Duration
		staleAfter time.Duration
		want       bool
	}{
		"staleAfter unset":     {created: created, age: 365 * 24 * time.Hour},
		"younger":              {created: created, age: 59 * time.Minute, staleAfter: time.Hour},
		"exactly staleAfter":   {created: created, age: time.Hour, staleAfter: time.Hour},
		"older":                {created: created, age: time.Hour + time.Second, staleAfter: time.Hour, want: true},
		"no Created is never":  {age: 365 * 24 * time.Hour, staleAfter: time.Minute},
		"Created ahead is not": {created: created, age: -time.Hour, staleAfter: time.Minute},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := staleLock(tc.created, lockTaken.Add(tc.age), tc.staleAfter); got != tc.want {
				t.Errorf("staleLock = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLockTermsOf(t *testing.T) {
	now := lockTaken
	cases := map[string]struct {
		forceUnlock *backendsv1alpha1.ForceUnlockSpec
		policy      *backendsv1alpha1.LockPolicy
		want        lockTerms
	}{
		"nothing set": {want: lockTerms{grace: defaultHolderGoneGrace, now: now}},
		"everything set": {
			forceUnlock: &backendsv1alpha1.ForceUnlockSpec{LockID: "lock-1"},
			policy: &backendsv1alpha1.LockPolicy{StaleAfter: &metav1.Duration{Duration: time.Hour}, ReleaseWhenHolderGone: true,
				GracePeriod: &metav1.Duration{Duration: 30 * time.Second}},
			want: lockTerms{forceUnlockID: "lock-1", staleAfter: time.Hour, grace: 30 * time.Second, now: now},
		},
		"a policy without a grace period": {
			policy: &backendsv1alpha1.LockPolicy{ReleaseWhenHolderGone: true},
			want:   lockTerms{grace: defaultHolderGoneGrace, now: now},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, lockTermsOf(tc.forceUnlock, tc.policy, now), cmp.AllowUnexported(lockTerms{})); diff != "" {
				t.Errorf("lockTermsOf (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLockStatusUnderLockPolicy decides Locked, status.lock and
// status.holderPod for the readings lockPolicy adds to those of
// TestLockStatus: a stale lock, a holder whose Pod is seen, unseen or
// gone, and a release of a gone holder, done or failed.
func TestLockStatusUnderLockPolicy(t *testing.T) {
	const T, F = metav1.ConditionTrue, metav1.ConditionFalse
	now := lockTaken.Add(3 * time.Hour)
	bob := &backendsv1alpha1.LockInfo{ID: "lock-1", Who: "runner@runner-7", Created: new(metav1.NewTime(lockTaken))}
	running := &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Running"}
	gone := &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Succeeded", GoneSince: new(metav1.NewTime(lockTaken.Add(time.Hour)))}
	serverError := &stateclient.StatusError{Method: "UNLOCK", URL: "u", StatusCode: 500}
	type want struct {
		status    metav1.ConditionStatus
		reason    string
		known     bool
		holder    *backendsv1alpha1.LockInfo
		holderPod *backendsv1alpha1.HolderPod
	}
	cases := map[string]struct {
		reading  lockReading
		terms    lockTerms
		want     want
		mentions []string
	}{
		"held, no policy": {
			reading:  lockReading{held: true, holder: bob},
			want:     want{status: T, reason: "LockHeld", known: true, holder: bob},
			mentions: []string{"since 2030-01-01T12:00:00Z", "held for over 1h."},
		},
		"held longer than staleAfter": {
			reading:  lockReading{held: true, holder: bob},
			terms:    lockTerms{staleAfter: 2 * time.Hour},
			want:     want{status: T, reason: "StaleLock", known: true, holder: bob},
			mentions: []string{"held for over 1h, longer than lockPolicy.staleAfter (2h0m0s)"},
		},
		"held less than staleAfter": {
			reading: lockReading{held: true, holder: bob},
			terms:   lockTerms{staleAfter: 4 * time.Hour},
			want:    want{status: T, reason: "LockHeld", known: true, holder: bob},
		},
		"stale while forceUnlock names another lock": {
			reading:  lockReading{held: true, holder: bob},
			terms:    lockTerms{staleAfter: time.Hour, forceUnlockID: "lock-2"},
			want:     want{status: T, reason: "StaleLock", known: true, holder: bob},
			mentions: []string{"does not match the holder lock-1"},
		},
		"stale, holder without Created": {
			reading:  lockReading{held: true, holder: &backendsv1alpha1.LockInfo{ID: "lock-1"}},
			terms:    lockTerms{staleAfter: time.Minute},
			want:     want{status: T, reason: "LockHeld", known: true, holder: &backendsv1alpha1.LockInfo{ID: "lock-1"}},
			mentions: []string{"did not record when it took the lock"},
		},
		"stale, but its force unlock failed": {
			reading: lockReading{held: true, holder: bob, releaseErr: serverError},
			terms:   lockTerms{staleAfter: time.Hour, forceUnlockID: "lock-1"},
			want:    want{status: T, reason: "ServerError", known: true, holder: bob},
		},
		"the holder's Pod runs": {
			reading:  lockReading{held: true, holder: bob, sighting: holderSighting{state: holderPodSeen, hostname: "runner-7", pod: running}},
			terms:    lockTerms{grace: 5 * time.Minute},
			want:     want{status: T, reason: "LockHeld", known: true, holder: bob, holderPod: running},
			mentions: []string{"runs in Pod runner-7 (Running)", "gone for 5m0s"},
		},
		"the holder's Pod is gone, within the grace period": {
			reading:  lockReading{held: true, holder: bob, sighting: holderSighting{state: holderPodSeen, hostname: "runner-7", pod: gone}},
			terms:    lockTerms{grace: 5 * time.Minute},
			want:     want{status: T, reason: "LockHeld", known: true, holder: bob, holderPod: gone},
			mentions: []string{"ran in Pod runner-7, which has been Succeeded since 2030-01-01T13:00:00Z", "first probe after 2030-01-01T13:05:00Z"},
		},
		"the holder's hostname names no Pod seen": {
			reading:  lockReading{held: true, holder: bob, sighting: holderSighting{state: holderPodUnseen, hostname: "runner-7"}},
			want:     want{status: T, reason: "LockHeld", known: true, holder: bob},
			mentions: []string{"hostname runner-7 names no Pod", "leaves it alone"},
		},
		"the holder's Who names no host": {
			reading:  lockReading{held: true, holder: bob, sighting: holderSighting{state: holderNotAPod}},
			want:     want{status: T, reason: "LockHeld", known: true, holder: bob},
			mentions: []string{"no hostname that can name a Pod"},
		},
		"the holder's Pod cannot be read: the record is kept": {
			reading: lockReading{held: true, holder: bob, sighting: holderSighting{state: holderPodUnreadable, hostname: "runner-7", pod: gone,
				err: errors.New("pods \"runner-7\" is forbidden")}},
			want:     want{status: T, reason: "LockHeld", known: true, holder: bob, holderPod: gone},
			mentions: []string{"cannot be read (pods \"runner-7\" is forbidden)"},
		},
		"the gone holder's lock released": {
			reading: lockReading{held: true, holder: bob, released: true, goneRelease: true,
				sighting: holderSighting{state: holderPodSeen, hostname: "runner-7", pod: gone}},
			terms:    lockTerms{grace: 5 * time.Minute, staleAfter: time.Hour},
			want:     want{status: F, reason: "HolderGoneReleased", known: true},
			mentions: []string{"Released lock lock-1 held by runner@runner-7: its Pod runner-7 had been Succeeded since 2030-01-01T13:00:00Z, longer than lockPolicy.gracePeriod (5m0s)"},
		},
		"the gone holder's lock not released": {
			reading: lockReading{held: true, holder: bob, goneRelease: true, releaseErr: serverError,
				sighting: holderSighting{state: holderPodSeen, hostname: "runner-7", pod: gone}},
			terms:    lockTerms{grace: 5 * time.Minute},
			want:     want{status: T, reason: "ServerError", known: true, holder: bob, holderPod: gone},
			mentions: []string{"The release (its holder's Pod is gone) of lock-1 failed", "tried again at the next probe"},
		},
		"the gone holder's lock taken by another meanwhile (cos)": {
			reading: lockReading{held: true, holder: bob, goneRelease: true, releaseErr: fmt.Errorf("release lock lock-1: %w: the lock held is lock-2", cos.ErrLockNotHeld),
				sighting: holderSighting{state: holderPodSeen, hostname: "runner-7", pod: gone}},
			want:     want{status: T, reason: "ServerError", known: true, holder: bob, holderPod: gone},
			mentions: []string{"the lock held is lock-2"},
		},
		"a failed read keeps everything": {
			reading: lockReading{err: serverError},
			want:    want{status: metav1.ConditionUnknown, reason: "ServerError"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.terms.now = now
			v := lockStatus(tc.reading, tc.terms)
			got := want{status: v.obs.Status, reason: v.obs.Reason, known: v.known, holder: v.holder, holderPod: v.holderPod}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("lockStatus (-want +got):\n%s\nmessage: %s", diff, v.obs.Message)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(v.obs.Message, m) {
					t.Errorf("message %q does not mention %q", v.obs.Message, m)
				}
			}
		})
	}
}

// gatherLockAges returns the series of infrastate_state_lock_age_seconds c
// serves, by "kind/namespace/name".
func gatherLockAges(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "infrastate_state_lock_age_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["kind"]+"/"+labels["namespace"]+"/"+labels["name"]] = m.GetGauge().GetValue()
		}
	}
	return got
}

// TestLockAgeCollector checks that the age is counted at scrape time from
// the Created recorded at the last probe, and that forgotten locks have
// no series.
func TestLockAgeCollector(t *testing.T) {
	now := lockTaken
	c := newLockAgeCollector(func() time.Time { return now })
	c.set("HttpBackend", "team-a", "web", lockTaken.Add(-90*time.Second))
	c.set("CosBackend", "team-a", "net", lockTaken.Add(time.Minute)) // a clock ahead
	if diff := cmp.Diff(map[string]float64{"HttpBackend/team-a/web": 90, "CosBackend/team-a/net": 0}, gatherLockAges(t, c)); diff != "" {
		t.Errorf("ages (-want +got):\n%s", diff)
	}

	now = now.Add(time.Hour) // no probe since: the age still moves
	if diff := cmp.Diff(map[string]float64{"HttpBackend/team-a/web": 3690, "CosBackend/team-a/net": 3540}, gatherLockAges(t, c)); diff != "" {
		t.Errorf("ages an hour later (-want +got):\n%s", diff)
	}

	c.forget("CosBackend", "team-a", "net")
	if diff := cmp.Diff(map[string]float64{"HttpBackend/team-a/web": 3690}, gatherLockAges(t, c)); diff != "" {
		t.Errorf("ages after forget (-want +got):\n%s", diff)
	}
}

// TestApplyLockRecordsTheLockAge checks the series the probes leave in
// the manager's collector: set for a held lock with Created, removed when
// the lock is free, held without Created, no longer checked, or the
// backend forgotten; kept when the lock cannot be read.
func TestApplyLockRecordsTheLockAge(t *testing.T) {
	const kind, ns = backendsv1alpha1.HttpBackendKind, "lock-age-test"
	holder := &backendsv1alpha1.LockInfo{ID: "lock-1", Who: "bob@ci", Created: new(metav1.NewTime(lockTaken))}
	noCreated := &backendsv1alpha1.LockInfo{ID: "lock-1", Who: "bob@ci"}
	m := newOperatorMetrics(clock.RealClock{})
	recorded := func(name string) (time.Time, bool) {
		m.lockAges.mu.Lock()
		defer m.lockAges.mu.Unlock()
		created, ok := m.lockAges.created[lockAgeKey{kind, ns, name}]
		return created, ok
	}
	steps := []struct {
		name  string
		do    func(b *backendsv1alpha1.HttpBackend)
		wantS bool
	}{
		{"held", func(b *backendsv1alpha1.HttpBackend) {
			applyLock(m, b, kind, httpFailures, lockReading{held: true, holder: holder}, nil, nil, lockTaken)
		}, true},
		{"unreadable", func(b *backendsv1alpha1.HttpBackend) {
			applyLock(m, b, kind, httpFailures, lockReading{err: errors.New("boom")}, nil, nil, lockTaken)
		}, true},
		{"free", func(b *backendsv1alpha1.HttpBackend) {
			applyLock(m, b, kind, httpFailures, lockReading{}, nil, nil, lockTaken)
		}, false},
		{"held again", func(b *backendsv1alpha1.HttpBackend) {
			applyLock(m, b, kind, httpFailures, lockReading{held: true, holder: holder}, nil, nil, lockTaken)
		}, true},
		{"held without Created", func(b *backendsv1alpha1.HttpBackend) {
			applyLock(m, b, kind, httpFailures, lockReading{held: true, holder: noCreated}, nil, nil, lockTaken)
		}, false},
		{"held, then no longer checked", func(b *backendsv1alpha1.HttpBackend) {
			applyLock(m, b, kind, httpFailures, lockReading{held: true, holder: holder}, nil, nil, lockTaken)
			applyUncheckedLock(m, b, kind, nil, "set probe.lockCheck")
		}, false},
		{"held, then the backend forgotten", func(b *backendsv1alpha1.HttpBackend) {
			applyLock(m, b, kind, httpFailures, lockReading{held: true, holder: holder}, nil, nil, lockTaken)
			m.forgetBackend(kind, ns, b.Name)
		}, false},
	}
	for _, step := range steps {
		b := builders.MakeHttpBackend("web", ns, "").UID("uid-web").Obj()
		step.do(b)
		created, ok := recorded("web")
		if ok != step.wantS || (ok && !created.Equal(lockTaken)) {
			t.Errorf("%s: series recorded = %v (Created %s), want %v (Created %s)", step.name, ok, created, step.wantS, lockTaken)
		}
	}
}

// TestApplyLockRecordsAReleaseOfAnUnnamedHolder checks the release of a
// lock on a server whose conflicts name no holder: status.lastForceUnlock
// records the lock forceUnlock named, since no holder was read.
func TestApplyLockRecordsAReleaseOfAnUnnamedHolder(t *testing.T) {
	m := newOperatorMetrics(clock.RealClock{})
	b := &backendsv1alpha1.HttpBackend{}
	b.Namespace, b.Name = "release-test", "app"
	applyLock(m, b, backendsv1alpha1.HttpBackendKind, httpFailures, lockReading{held: true, named: "lock-1", released: true},
		&backendsv1alpha1.ForceUnlockSpec{LockID: "lock-1"}, nil, lockTaken)
	want := &backendsv1alpha1.ForceUnlockStatus{LockID: "lock-1", Time: metav1.NewTime(lockTaken)}
	if diff := cmp.Diff(want, b.Status.LastForceUnlock); diff != "" {
		t.Errorf("lastForceUnlock (-want +got):\n%s", diff)
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, backendsv1alpha1.LockedCondition); c == nil || c.Reason != backendsv1alpha1.ForceUnlockedReason {
		t.Errorf("Locked = %+v, want ForceUnlocked", c)
	}
}
