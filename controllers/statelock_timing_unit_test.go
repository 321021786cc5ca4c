package controllers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

func TestOwnsLock(t *testing.T) {
	recorded := makeSlock().Holds(slockInfo(slockCreated)).Obj()
	unrecorded := makeSlock().Obj()
	cases := map[string]struct {
		sl     *backendsv1alpha1.StateLock
		holder *backendsv1alpha1.LockInfo
		want   bool
	}{
		"no holder":                    {sl: recorded},
		"no holder, nothing recorded":  {sl: unrecorded},
		"the recorded ID":              {sl: recorded, holder: &backendsv1alpha1.LockInfo{ID: "L"}, want: true},
		"another ID than the recorded": {sl: recorded, holder: &backendsv1alpha1.LockInfo{ID: "M", Who: slockWho, Created: new(metav1.NewTime(slockNow))}},
		"unrecorded, its Who, taken after creation": {
			sl: unrecorded, holder: &backendsv1alpha1.LockInfo{ID: "M", Who: slockWho, Created: new(metav1.NewTime(slockNow))}, want: true,
		},
		"unrecorded, its Who, taken the second it was created": {
			sl: unrecorded, holder: &backendsv1alpha1.LockInfo{ID: "M", Who: slockWho, Created: new(metav1.NewTime(slockCreated))}, want: true,
		},
		"unrecorded, its Who, taken before creation (an earlier StateLock of the name)": {
			sl: unrecorded, holder: &backendsv1alpha1.LockInfo{ID: "M", Who: slockWho, Created: new(metav1.NewTime(slockCreated.Add(-adoptionClockSkew - time.Second)))},
		},
		"unrecorded, its Who, Created behind creation within the clock skew allowed": {
			sl: unrecorded, holder: &backendsv1alpha1.LockInfo{ID: "M", Who: slockWho, Created: new(metav1.NewTime(slockCreated.Add(-time.Second)))}, want: true,
		},
		"unrecorded, its Who, no creation time": {
			sl: unrecorded, holder: &backendsv1alpha1.LockInfo{ID: "M", Who: slockWho},
		},
		"unrecorded, another Who": {
			sl: unrecorded, holder: &backendsv1alpha1.LockInfo{ID: "M", Who: "backend-operator/team-a/freeze2", Created: new(metav1.NewTime(slockNow))},
		},
		"unrecorded, another namespace's StateLock of the name": {
			sl: unrecorded, holder: &backendsv1alpha1.LockInfo{ID: "M", Who: "backend-operator/team-b/freeze", Created: new(metav1.NewTime(slockNow))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ownsLock(tc.sl, tc.holder); got != tc.want {
				t.Errorf("ownsLock() = %v, want %v", got, tc.want)
			}
		})
	}
	if got := stateLockWho(unrecorded); got != slockWho {
		t.Errorf("stateLockWho() = %q, want %q", got, slockWho)
	}
}

func TestLockRetryAfter(t *testing.T) {
	cases := map[string]struct {
		waited time.Duration
		want   time.Duration
	}{
		"just started":              {waited: 0, want: minLockRetry},
		"a quarter below the floor": {waited: 4 * time.Second, want: minLockRetry},
		"at the floor":              {waited: 8 * time.Second, want: 2 * time.Second},
		"a quarter of the wait":     {waited: 40 * time.Second, want: 10 * time.Second},
		"at the ceiling":            {waited: 2 * time.Minute, want: maxLockRetry},
		"past the ceiling":          {waited: 24 * time.Hour, want: maxLockRetry},
		"since in the future":       {waited: -time.Hour, want: minLockRetry},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := lockRetryAfter(slockNow.Add(-tc.waited), slockNow); got != tc.want {
				t.Errorf("lockRetryAfter(now-%s) = %s, want %s", tc.waited, got, tc.want)
			}
		})
	}
}

func TestSlockInterval(t *testing.T) {
	const checkEvery = 5 * time.Minute
	cases := map[string]struct {
		sl     *backendsv1alpha1.StateLock
		action slockAction
		want   time.Duration
	}{
		"idle: nothing due": {
			sl: makeSlock().Condition(slockLost(1)).Obj(), action: slockIdle,
		},
		"idle while a wait was recorded: nothing due": {
			sl: makeSlock().Condition(slockLocked("False", "WaitingForLock", 1, slockNow.Add(-time.Hour))).Obj(), action: slockIdle,
		},
		"holding: the backend's probe interval": {
			sl: makeSlock().Holds(slockInfo(slockCreated)).Condition(slockLocked("True", "LockAcquired", 1, slockCreated)).Obj(), action: slockHold, want: checkEvery,
		},
		"holding, no Locked yet: the backend's probe interval": {
			sl: makeSlock().Holds(slockInfo(slockCreated)).Obj(), action: slockHold, want: checkEvery,
		},
		"waiting for 40s: a quarter of it": {
			sl: makeSlock().Condition(slockLocked("False", "WaitingForLock", 1, slockNow.Add(-40*time.Second))).Obj(), action: slockHold, want: 10 * time.Second,
		},
		"waiting for an hour: the ceiling": {
			sl: makeSlock().Condition(slockLocked("False", "WaitingForLock", 1, slockNow.Add(-time.Hour))).Obj(), action: slockHold, want: maxLockRetry,
		},
		"a failed check while holding: retried soon, not at the probe interval": {
			sl: makeSlock().Holds(slockInfo(slockCreated)).Condition(slockLocked("Unknown", "Unreachable", 1, slockNow)).Obj(), action: slockHold, want: minLockRetry,
		},
		"a failed release: retried as it grows": {
			sl:     makeSlock().Until(slockNow.Add(-time.Hour)).Holds(slockInfo(slockCreated)).Condition(slockLocked("Unknown", "Unreachable", 1, slockNow.Add(-80*time.Second))).Obj(),
			action: slockRelease, want: 20 * time.Second,
		},
		"nothing held yet: the floor": {
			sl: makeSlock().Obj(), action: slockHold, want: minLockRetry,
		},
		"lost for an older generation: the floor": {
			sl: makeSlock().Generation(2).Condition(slockLost(1)).Obj(), action: slockHold, want: minLockRetry,
		},
		"releasing a held lock: the floor": {
			sl:     makeSlock().Until(slockNow.Add(-time.Minute)).Holds(slockInfo(slockCreated)).Condition(slockLocked("True", "LockAcquired", 1, slockCreated)).Obj(),
			action: slockRelease, want: minLockRetry,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := slockInterval(tc.sl, tc.action, checkEvery, slockNow); got != tc.want {
				t.Errorf("slockInterval(%v) = %s, want %s", tc.action, got, tc.want)
			}
		})
	}
}

func TestSlockActionString(t *testing.T) {
	got := []string{slockIdle.String(), slockHold.String(), slockRelease.String()}
	if diff := cmp.Diff([]string{"idle", "hold", "release"}, got); diff != "" {
		t.Errorf("action names (-want +got):\n%s", diff)
	}
}
