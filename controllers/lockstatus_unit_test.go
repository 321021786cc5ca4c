package controllers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
	"github.com/infrastate/backend-operator/internal/conformance"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/render"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// TestLockStatus decides Locked and status.lock for every kind of
// reading: a failed read is Unknown and keeps the last holder (it is not
// a release), and a release that failed keeps the lock held.
func TestLockStatus(t *testing.T) {
	const T, F, U = metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	bob := &backendsv1alpha1.LockInfo{ID: "lock-1", Who: "bob@ci"}
	serverError := &stateclient.RetryError{Method: "LOCK", URL: "u", Attempts: 3, Err: &stateclient.StatusError{Method: "LOCK", URL: "u", StatusCode: 500}}
	timeout := fmt.Errorf("LOCK u: %w", context.DeadlineExceeded)
	type want struct {
		status   metav1.ConditionStatus
		reason   string
		known    bool
		holder   *backendsv1alpha1.LockInfo
		mentions string
	}
	cases := map[string]struct {
		reading     lockReading
		forceUnlock string
		want        want
	}{
		"not locked":              {want: want{status: F, reason: "NotLocked", known: true}},
		"held":                    {reading: lockReading{held: true, holder: bob}, want: want{status: T, reason: "LockHeld", known: true, holder: bob, mentions: "lock-1"}},
		"held, holder unreadable": {reading: lockReading{held: true}, want: want{status: T, reason: "LockHeld", known: true, mentions: "cannot be read"}},
		"the server answers 500": {reading: lockReading{err: serverError},
			want: want{status: U, reason: "ServerError", mentions: "500"}},
		"the check times out": {reading: lockReading{err: timeout}, want: want{status: U, reason: "Unreachable"}},
		"the client certificate is refused": {reading: lockReading{err: &net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}},
			want: want{status: U, reason: "TLSError"}},
		"a COS lock object that cannot be read": {reading: lockReading{err: fmt.Errorf("read lock: %w", cos.ErrInvalidLock)},
			want: want{status: U, reason: "ServerError"}},
		"the check's own lock stays": {reading: lockReading{held: true, holder: bob, ownErr: serverError},
			want: want{status: T, reason: "LockCheckNotReleased", known: true, holder: bob, mentions: "next probe releases it"}},
		"forceUnlock released the holder": {reading: lockReading{held: true, holder: bob, released: true}, forceUnlock: "lock-1",
			want: want{status: F, reason: "ForceUnlocked", known: true, mentions: "bob@ci"}},
		"forceUnlock refused by the server": {reading: lockReading{held: true, holder: bob, named: "lock-1", releaseErr: &forceUnlockRefusedError{body: conformance.BodyID, status: 400}}, forceUnlock: "lock-1",
			want: want{status: T, reason: "ForceUnlockRefused", known: true, holder: bob, mentions: "UNLOCK with a body naming the ID with HTTP 400"}},
		"forceUnlock on a server that names no holder, released": {reading: lockReading{held: true, named: "lock-1", released: true}, forceUnlock: "lock-1",
			want: want{status: F, reason: "ForceUnlocked", known: true, mentions: "Released lock lock-1"}},
		"forceUnlock the server does not allow": {reading: lockReading{held: true, named: "lock-1",
			releaseErr: &forceUnlockUnsupportedError{plan: conformance.NamedUnlockPlan{Reason: "the server ignores UNLOCK bodies", Terraform: "terraform force-unlock sends an empty body"}}},
			forceUnlock: "lock-1",
			want:        want{status: T, reason: "ForceUnlockUnsupported", known: true, mentions: "the server ignores UNLOCK bodies (see status.server). Instead, terraform force-unlock sends an empty body"}},
		"forceUnlock failed to reach the server": {reading: lockReading{held: true, holder: bob, releaseErr: timeout}, forceUnlock: "lock-1",
			want: want{status: T, reason: "Unreachable", known: true, holder: bob}},
		"forceUnlock names another lock": {reading: lockReading{held: true, holder: bob}, forceUnlock: "lock-2",
			want: want{status: T, reason: "ForceUnlockSkipped", known: true, holder: bob, mentions: "does not match the holder lock-1"}},
		"forceUnlock with nothing held": {forceUnlock: "lock-2", want: want{status: F, reason: "NotLocked", known: true, mentions: "nothing to release"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := lockStatus(tc.reading, lockTerms{forceUnlockID: tc.forceUnlock, failures: everyKindsFailures})
			got := want{status: v.obs.Status, reason: v.obs.Reason, known: v.known, holder: v.holder, mentions: tc.want.mentions}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("lockStatus mismatch (-want +got):\n%s\nmessage: %s", diff, v.obs.Message)
			}
			if !strings.Contains(v.obs.Message, tc.want.mentions) {
				t.Errorf("message %q does not mention %q", v.obs.Message, tc.want.mentions)
			}

			// The event the verdict causes after a probe that saw bob
			// holding the lock: a failed read is never a release.
			before := statusView{conditions: []metav1.Condition{{Type: "Locked", Status: T, Reason: "LockHeld"}}, holder: bob}
			after := statusView{conditions: []metav1.Condition{{Type: "Locked", Status: v.obs.Status, Reason: v.obs.Reason, Message: v.obs.Message}}, holder: bob}
			if v.known {
				after.holder = v.holder
			}
			for _, e := range transitionEvents(before, after) {
				if e.reason == "LockReleased" && v.obs.Status != F {
					t.Errorf("event %s for a lock that is not known to be free", e.reason)
				}
			}
		})
	}
}

func TestStateSummaryAndLockInfo(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := map[string]struct {
		in   *stateclient.StateSummary
		want *backendsv1alpha1.StateSummary
	}{
		"no state": {in: &stateclient.StateSummary{}, want: &backendsv1alpha1.StateSummary{}},
		"nil":      {want: &backendsv1alpha1.StateSummary{}},
		"a state": {
			in: &stateclient.StateSummary{Present: true, SizeBytes: 42, Summary: statefile.Summary{
				Serial: 9, Lineage: "l", TerraformVersion: "1.5.7", OutputCount: 2,
			}},
			want: &backendsv1alpha1.StateSummary{Present: true, Serial: 9, Lineage: "l", TerraformVersion: "1.5.7", SizeBytes: 42, OutputCount: 2},
		},
		"an encrypted state not decrypted": {
			in:   &stateclient.StateSummary{Present: true, SizeBytes: 42, Summary: statefile.Summary{Serial: 9, Lineage: "l", Encrypted: true}},
			want: &backendsv1alpha1.StateSummary{Present: true, Serial: 9, Lineage: "l", SizeBytes: 42, Encrypted: true},
		},
		"an encrypted state decrypted": {
			in: &stateclient.StateSummary{Present: true, SizeBytes: 42, Summary: statefile.Summary{
				Serial: 9, Lineage: "l", TerraformVersion: "1.12.6", OutputCount: 2, Encrypted: true,
			}},
			want: &backendsv1alpha1.StateSummary{Present: true, Serial: 9, Lineage: "l", TerraformVersion: "1.12.6", SizeBytes: 42, OutputCount: 2, Encrypted: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, stateSummary(tc.in)); diff != "" {
				t.Errorf("stateSummary() mismatch (-want +got):\n%s", diff)
			}
		})
	}

	long := string(make([]byte, 5000))
	got := lockInfo(&stateclient.LockInfo{ID: "id", Who: "me", Info: long, Created: created})
	if len(got.Info) != 4096 || got.ID != "id" || !got.Created.Time.Equal(created) {
		t.Errorf("lockInfo() = %+v, want Info clipped to 4096 bytes and fields kept", got)
	}
	if lockInfo(nil) != nil {
		t.Error("lockInfo(nil) is not nil")
	}
	if got := conditions.Clip("héllo", 2); got != "h" {
		t.Errorf(`clip("héllo", 2) = %q, want "h" (no split rune)`, got)
	}
}

func TestStateClientConfig(t *testing.T) {
	retryMax, waitMin, waitMax := int32(5), int32(0), int32(7)
	spec := backendsv1alpha1.HttpBackendSpec{
		Address: "https://s/state/x", UpdateMethod: "PUT", LockAddress: "https://s/lock", LockMethod: "POST",
		UnlockAddress: "https://s/unlock", UnlockMethod: "DELETE", Username: "u",
		RetryMax: &retryMax, RetryWaitMin: &waitMin, RetryWaitMax: &waitMax, SkipCertVerification: true,
	}
	secrets := render.HTTPSecrets{Password: []byte("p"), ClientCACertificatePEM: []byte("ca")}
	want := stateclient.Config{
		Address: "https://s/state/x", UpdateMethod: "PUT", LockAddress: "https://s/lock", LockMethod: "POST",
		UnlockAddress: "https://s/unlock", UnlockMethod: "DELETE", Username: "u", Password: "p",
		RetryMax: 5, RetryWaitMin: 0, RetryWaitMax: 7 * time.Second, SkipCertVerification: true,
		ClientCACertificatePEM: []byte("ca"), MaxStateBytes: stateclient.DefaultMaxStateBytes,
		AttemptTimeout: probeAttemptTimeout, // the operator bounds each attempt; Terraform does not
	}
	if diff := cmp.Diff(want, stateClientConfig(spec, secrets)); diff != "" {
		t.Errorf("stateClientConfig() mismatch (-want +got):\n%s", diff)
	}
	// Unset retry fields keep Terraform's defaults.
	got := stateClientConfig(backendsv1alpha1.HttpBackendSpec{Address: "http://s"}, render.HTTPSecrets{})
	if got.RetryMax != 2 || got.RetryWaitMin != time.Second || got.RetryWaitMax != 30*time.Second {
		t.Errorf("defaults = %d %s %s, want 2 1s 30s", got.RetryMax, got.RetryWaitMin, got.RetryWaitMax)
	}
}

func TestProbeSchedule(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "b"}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := probes.NewSchedule()
	if due, _ := s.Due(key, "in", start); !due {
		t.Fatal("a never probed object is not due")
	}
	next := s.Probed(key, "in", start, time.Minute)
	if next < time.Minute || next > 66*time.Second {
		t.Fatalf("jittered wait %s, want between 1m and 1m6s", next)
	}
	if due, wait := s.Due(key, "in", start.Add(30*time.Second)); due || wait != next-30*time.Second {
		t.Errorf("due half way = %v, %s; want false, %s", due, wait, next-30*time.Second)
	}
	if due, _ := s.Due(key, "rotated", start.Add(time.Second)); !due {
		t.Error("new inputs do not make a probe due")
	}
	if due, _ := s.Due(key, "in", start.Add(next)); !due {
		t.Error("not due after the interval")
	}
	s.Probed(key, "in", start, 0)
	if due, wait := s.Due(key, "in", start.Add(24*time.Hour)); due || wait != 0 {
		t.Errorf("with probing off: due = %v, %s; want false, 0", due, wait)
	}
	s.Forget(key)
	if due, _ := s.Due(key, "in", start); !due {
		t.Error("a forgotten object is not due")
	}
}
