package controllers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testenv"
)

func TestHolderHostname(t *testing.T) {
	cases := map[string]struct {
		who      string
		want     string
		wantPod  bool
		describe string
	}{
		"a runner pod":                 {who: "runner@tf-apply-7c9d-x2k4q", want: "tf-apply-7c9d-x2k4q", wantPod: true},
		"the last @ counts":            {who: "ci@example.com@runner-1", want: "runner-1", wantPod: true},
		"a dotted hostname":            {who: "root@runner-1.runners.svc", want: "runner-1.runners.svc", wantPod: true},
		"no @":                         {who: "runner-1"},
		"an empty Who":                 {},
		"an empty hostname":            {who: "runner@"},
		"upper case is no Pod name":    {who: "alice@Alices-MacBook"},
		"a space is no Pod name":       {who: "alice@my laptop"},
		"the operator's own lock":      {who: "backend-operator lock check of HttpBackend team-a/web"},
		"a trailing dash":              {who: "runner@runner-"},
		"a hostname longer than 253":   {who: "runner@" + strings.Repeat("a", 254)},
		"a path in place of the host":  {who: "runner@../secrets"},
		"a slash in place of the host": {who: "runner@team-a/runner-1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := holderHostname(tc.who)
			if got != tc.want || ok != tc.wantPod {
				t.Errorf("holderHostname(%q) = %q, %v, want %q, %v", tc.who, got, ok, tc.want, tc.wantPod)
			}
		})
	}
}

func TestSameLock(t *testing.T) {
	created := lockTaken.Add(123456789 * time.Nanosecond)
	read := &backendsv1alpha1.LockInfo{ID: "lock-1", Who: "runner@runner-7", Created: new(metav1.NewTime(created))}
	cases := map[string]struct {
		seen *backendsv1alpha1.LockInfo
		want bool
	}{
		"as status keeps it (to the second)": {seen: &backendsv1alpha1.LockInfo{ID: "lock-1", Who: "runner@runner-7", Created: new(metav1.NewTime(lockTaken))}, want: true},
		"none seen":                          {},
		"another ID":                         {seen: &backendsv1alpha1.LockInfo{ID: "lock-2", Who: "runner@runner-7", Created: new(metav1.NewTime(lockTaken))}},
		"another Who":                        {seen: &backendsv1alpha1.LockInfo{ID: "lock-1", Who: "runner@runner-8", Created: new(metav1.NewTime(lockTaken))}},
		"another Created":                    {seen: &backendsv1alpha1.LockInfo{ID: "lock-1", Who: "runner@runner-7", Created: new(metav1.NewTime(lockTaken.Add(time.Second)))}},
		"no Created seen":                    {seen: &backendsv1alpha1.LockInfo{ID: "lock-1", Who: "runner@runner-7"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := sameLock(tc.seen, read); got != tc.want {
				t.Errorf("sameLock = %v, want %v", got, tc.want)
			}
		})
	}
	if sameLock(&backendsv1alpha1.LockInfo{}, &backendsv1alpha1.LockInfo{}) {
		t.Errorf("two locks without an ID are the same lock")
	}
}

// holderPod is the Pod "runner-7" of the harness namespace with uid in
// phase, created at created.
func holderPod(uid string, phase corev1.PodPhase, created time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "runner-7", Namespace: harnessNamespace, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(created)},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

// finishedAt is pod with its one container terminated at t, as the
// kubelet reports it.
func finishedAt(pod *corev1.Pod, t time.Time) *corev1.Pod {
	p := pod.DeepCopy()
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "terraform",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(t)}}}}
	return p
}

func TestNextHolderPod(t *testing.T) {
	podCreated := lockTaken.Add(-time.Minute)
	now := lockTaken.Add(time.Hour)
	taken := new(metav1.NewTime(lockTaken))
	since := new(metav1.NewTime(lockTaken.Add(30 * time.Minute)))
	nowT := new(metav1.NewTime(now))
	running := holderPod("uid-7", corev1.PodRunning, podCreated)
	succeeded := holderPod("uid-7", corev1.PodSucceeded, podCreated)
	failed := holderPod("uid-7", corev1.PodFailed, podCreated)
	replaced := holderPod("uid-8", corev1.PodRunning, lockTaken.Add(40*time.Minute))
	seenRunning := &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Running"}
	withHostname := func(p *corev1.Pod, hostname string) *corev1.Pod {
		p = p.DeepCopy()
		p.Spec.Hostname = hostname
		return p
	}
	cases := map[string]struct {
		prior       *backendsv1alpha1.HolderPod
		lockCreated *metav1.Time
		pod         *corev1.Pod
		// now is when the probe reads pod: an hour after the lock was
		// taken when zero.
		now          time.Time
		want         *backendsv1alpha1.HolderPod
		wantEvidence podEvidence
	}{
		"first sight, running": {pod: running, lockCreated: taken,
			want: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Running"}},
		"first sight, pending": {pod: holderPod("uid-7", corev1.PodPending, podCreated), lockCreated: taken,
			want: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Pending"}},
		"first sight, succeeded: never seen running, never the holder": {pod: succeeded, lockCreated: taken,
			wantEvidence: podEvidence{refusal: podNeverSeenRunning, phase: corev1.PodSucceeded}},
		"first sight, failed: never seen running, never the holder": {pod: failed, lockCreated: taken,
			wantEvidence: podEvidence{refusal: podNeverSeenRunning, phase: corev1.PodFailed}},
		"first sight, unknown: not seen running": {pod: holderPod("uid-7", corev1.PodUnknown, podCreated), lockCreated: taken,
			wantEvidence: podEvidence{refusal: podNeverSeenRunning, phase: corev1.PodUnknown}},
		"first sight, a Pod that finished 3s before the lock was taken": {
			pod: finishedAt(succeeded, lockTaken.Add(-3*time.Second)), lockCreated: taken, now: lockTaken.Add(31 * time.Second),
			wantEvidence: podEvidence{refusal: podFinishedBeforeLock, at: lockTaken.Add(-3 * time.Second), phase: corev1.PodSucceeded}},
		"first sight, a Pod still reported running whose container finished before the lock": {
			pod: finishedAt(running, lockTaken.Add(-3*time.Second)), lockCreated: taken,
			wantEvidence: podEvidence{refusal: podFinishedBeforeLock, at: lockTaken.Add(-3 * time.Second), phase: corev1.PodRunning}},
		"first sight, no Pod: nothing seen, nothing recorded": {lockCreated: taken},
		"first sight, a Pod created after the lock was taken": {pod: replaced, lockCreated: taken,
			wantEvidence: podEvidence{refusal: podCreatedAfterLock, at: lockTaken.Add(40 * time.Minute), phase: corev1.PodRunning}},
		"first sight, a Pod created 25s after a lock taken outside the cluster": {
			pod: holderPod("uid-decoy", corev1.PodRunning, lockTaken.Add(25*time.Second)), lockCreated: taken, now: lockTaken.Add(26 * time.Second),
			wantEvidence: podEvidence{refusal: podCreatedAfterLock, at: lockTaken.Add(25 * time.Second), phase: corev1.PodRunning}},
		"first sight, a Pod created within the clock skew before the lock": {
			pod: holderPod("uid-7", corev1.PodRunning, lockTaken.Add(-holderClockSkew+time.Second)), lockCreated: taken,
			wantEvidence: podEvidence{refusal: podCreatedAfterLock, at: lockTaken.Add(-holderClockSkew + time.Second), phase: corev1.PodRunning}},
		"first sight, a lock without Created": {pod: running,
			wantEvidence: podEvidence{refusal: lockWithoutCreated, phase: corev1.PodRunning}},
		"first sight, running, within the clock skew of the lock's Created": {pod: running, lockCreated: taken, now: lockTaken.Add(holderClockSkew - time.Second),
			wantEvidence: podEvidence{refusal: podSeenTooSoon, phase: corev1.PodRunning}},
		"first sight, running, before the lock's Created by the operator's clock": {pod: running, lockCreated: taken, now: lockTaken.Add(-time.Minute),
			wantEvidence: podEvidence{refusal: podSeenTooSoon, phase: corev1.PodRunning}},
		"first sight, a Pod with another hostname": {lockCreated: taken, pod: withHostname(running, "other"),
			wantEvidence: podEvidence{refusal: podOtherHostname, phase: corev1.PodRunning}},
		"first sight, a Pod whose hostname is set to its name": {lockCreated: taken, pod: withHostname(running, "runner-7"),
			want: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Running"}},
		"seen running, still running": {prior: seenRunning, lockCreated: taken, pod: running,
			want: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Running"}},
		"seen running, now succeeded": {prior: seenRunning, lockCreated: taken, pod: succeeded,
			want: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Succeeded", GoneSince: nowT}},
		"seen running, now succeeded after the lock was taken": {prior: seenRunning, lockCreated: taken,
			pod:  finishedAt(succeeded, lockTaken.Add(holderClockSkew)),
			want: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Succeeded", GoneSince: nowT}},
		"seen running, now found to have finished before the lock was taken: the record is dropped": {prior: seenRunning, lockCreated: taken,
			pod:          finishedAt(succeeded, lockTaken.Add(-time.Second)),
			wantEvidence: podEvidence{refusal: podFinishedBeforeLock, at: lockTaken.Add(-time.Second), phase: corev1.PodSucceeded}},
		"seen succeeded, still: goneSince is kept": {prior: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Succeeded", GoneSince: since},
			lockCreated: taken, pod: succeeded, want: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Succeeded", GoneSince: since}},
		"seen succeeded, now deleted: goneSince is kept": {prior: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Succeeded", GoneSince: since},
			lockCreated: taken, want: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Gone", GoneSince: since}},
		"seen running, now deleted": {prior: seenRunning, lockCreated: taken,
			want: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Gone", GoneSince: nowT}},
		"seen running, now another Pod of the name": {prior: seenRunning, lockCreated: taken, pod: replaced,
			want: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Gone", GoneSince: nowT}},
		"a prior without UID is no sighting": {prior: &backendsv1alpha1.HolderPod{Name: "runner-7", Phase: "Gone", GoneSince: since},
			lockCreated: taken},
		"a prior without UID is no sighting of a Pod that finished": {prior: &backendsv1alpha1.HolderPod{Name: "runner-7", Phase: "Running"},
			lockCreated: taken, pod: succeeded, wantEvidence: podEvidence{refusal: podNeverSeenRunning, phase: corev1.PodSucceeded}},
		"a phase that went back clears goneSince": {prior: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Succeeded", GoneSince: since},
			lockCreated: taken, pod: running, want: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Running"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			at := tc.now
			if at.IsZero() {
				at = now
			}
			got, evidence := nextHolderPod(tc.prior, "runner-7", tc.lockCreated, tc.pod, at)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("nextHolderPod record (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvidence, evidence, cmp.AllowUnexported(podEvidence{})); diff != "" {
				t.Errorf("nextHolderPod evidence (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReleasable(t *testing.T) {
	const grace = 5 * time.Minute
	gone := new(metav1.NewTime(lockTaken))
	cases := map[string]struct {
		pod  *backendsv1alpha1.HolderPod
		now  time.Time
		want bool
	}{
		"no Pod seen":            {now: lockTaken.Add(time.Hour)},
		"running":                {pod: &backendsv1alpha1.HolderPod{Name: "p", UID: "u", Phase: "Running"}, now: lockTaken.Add(time.Hour)},
		"gone, within the grace": {pod: &backendsv1alpha1.HolderPod{Name: "p", UID: "u", Phase: "Gone", GoneSince: gone}, now: lockTaken.Add(grace - time.Second)},
		"gone, at its end":       {pod: &backendsv1alpha1.HolderPod{Name: "p", UID: "u", Phase: "Gone", GoneSince: gone}, now: lockTaken.Add(grace), want: true},
		"succeeded, past it":     {pod: &backendsv1alpha1.HolderPod{Name: "p", UID: "u", Phase: "Succeeded", GoneSince: gone}, now: lockTaken.Add(time.Hour), want: true},
		"gone, but never seen":   {pod: &backendsv1alpha1.HolderPod{Name: "p", Phase: "Gone", GoneSince: gone}, now: lockTaken.Add(time.Hour)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := releasable(tc.pod, grace, tc.now); got != tc.want {
				t.Errorf("releasable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHolderReleaseAt(t *testing.T) {
	on := &backendsv1alpha1.LockPolicy{ReleaseWhenHolderGone: true, GracePeriod: &metav1.Duration{Duration: time.Minute}}
	lock := &backendsv1alpha1.LockInfo{ID: "lock-1"}
	gone := &backendsv1alpha1.HolderPod{Name: "p", UID: "u", Phase: "Gone", GoneSince: new(metav1.NewTime(lockTaken))}
	cases := map[string]struct {
		status backendsv1alpha1.BackendStatus
		policy *backendsv1alpha1.LockPolicy
		want   time.Time
	}{
		"gone":                  {status: backendsv1alpha1.BackendStatus{Lock: lock, HolderPod: gone}, policy: on, want: lockTaken.Add(time.Minute)},
		"the default grace":     {status: backendsv1alpha1.BackendStatus{Lock: lock, HolderPod: gone}, policy: &backendsv1alpha1.LockPolicy{ReleaseWhenHolderGone: true}, want: lockTaken.Add(defaultHolderGoneGrace)},
		"policy off":            {status: backendsv1alpha1.BackendStatus{Lock: lock, HolderPod: gone}, policy: &backendsv1alpha1.LockPolicy{}},
		"no policy":             {status: backendsv1alpha1.BackendStatus{Lock: lock, HolderPod: gone}},
		"running":               {status: backendsv1alpha1.BackendStatus{Lock: lock, HolderPod: &backendsv1alpha1.HolderPod{Name: "p", UID: "u", Phase: "Running"}}, policy: on},
		"no lock":               {status: backendsv1alpha1.BackendStatus{HolderPod: gone}, policy: on},
		"no Pod seen":           {status: backendsv1alpha1.BackendStatus{Lock: lock}, policy: on},
		"a record without UID":  {status: backendsv1alpha1.BackendStatus{Lock: lock, HolderPod: &backendsv1alpha1.HolderPod{Name: "p", Phase: "Gone", GoneSince: new(metav1.NewTime(lockTaken))}}, policy: on},
		"stale policy, no pods": {status: backendsv1alpha1.BackendStatus{Lock: lock}, policy: &backendsv1alpha1.LockPolicy{StaleAfter: &metav1.Duration{Duration: time.Hour}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := holderReleaseAt(&tc.status, tc.policy); !got.Equal(tc.want) {
				t.Errorf("holderReleaseAt = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestSettleHeldLock checks what a probe does about a held lock under
// forceUnlock and releaseWhenHolderGone: which Pod it reads (with a GET
// only), what it records, and which release it makes.
func TestSettleHeldLock(t *testing.T) {
	const grace = 5 * time.Minute
	now := lockTaken.Add(time.Hour)
	goneAt := new(metav1.NewTime(now.Add(-grace)))
	bob := &backendsv1alpha1.LockInfo{ID: "lock-1", Who: "runner@runner-7", Created: new(metav1.NewTime(lockTaken))}
	seenGone := &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Succeeded", GoneSince: goneAt}
	seenRunning := &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Running"}
	podCreated := lockTaken.Add(-time.Minute)
	type want struct {
		state     holderState
		pod       *backendsv1alpha1.HolderPod
		evidence  podEvidence
		released  []string
		gone      bool
		reads     []string
		errSaying string
	}
	cases := map[string]struct {
		reading     lockReading
		forceUnlock string
		policyOff   bool
		// seenLock and seenPod are status.lock and status.holderPod at
		// submission.
		seenLock *backendsv1alpha1.LockInfo
		seenPod  *backendsv1alpha1.HolderPod
		pods     []client.Object
		getErr   error
		want     want
	}{
		"a Pod seen gone for the grace period: released": {
			reading: lockReading{held: true, holder: bob}, seenLock: bob, seenPod: seenGone,
			pods: []client.Object{holderPod("uid-7", corev1.PodSucceeded, podCreated)},
			want: want{state: holderPodSeen, pod: seenGone, released: []string{"lock-1"}, gone: true, reads: []string{"runner-7"}},
		},
		"a Pod seen gone, deleted since: released": {
			reading: lockReading{held: true, holder: bob}, seenLock: bob, seenPod: seenGone,
			want: want{state: holderPodSeen, pod: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Gone", GoneSince: goneAt},
				released: []string{"lock-1"}, gone: true, reads: []string{"runner-7"}},
		},
		"a Pod seen gone within the grace period: kept": {
			reading: lockReading{held: true, holder: bob}, seenLock: bob,
			seenPod: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Succeeded", GoneSince: new(metav1.NewTime(now.Add(-grace + time.Second)))},
			pods:    []client.Object{holderPod("uid-7", corev1.PodSucceeded, podCreated)},
			want: want{state: holderPodSeen, pod: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Succeeded",
				GoneSince: new(metav1.NewTime(now.Add(-grace + time.Second)))}, reads: []string{"runner-7"}},
		},
		"a Pod seen running, now succeeded: gone from now": {
			reading: lockReading{held: true, holder: bob}, seenLock: bob, seenPod: seenRunning,
			pods: []client.Object{holderPod("uid-7", corev1.PodSucceeded, podCreated)},
			want: want{state: holderPodSeen, pod: &backendsv1alpha1.HolderPod{Name: "runner-7", UID: "uid-7", Phase: "Succeeded", GoneSince: new(metav1.NewTime(now))},
				reads: []string{"runner-7"}},
		},
		"a running Pod is never released": {
			reading: lockReading{held: true, holder: bob}, seenLock: bob, seenPod: seenRunning,
			pods: []client.Object{holderPod("uid-7", corev1.PodRunning, podCreated)},
			want: want{state: holderPodSeen, pod: seenRunning, reads: []string{"runner-7"}},
		},
		"the record of another lock is not built on": {
			reading: lockReading{held: true, holder: bob}, seenLock: &backendsv1alpha1.LockInfo{ID: "lock-0", Who: "runner@runner-7"}, seenPod: seenGone,
			pods: []client.Object{holderPod("uid-7", corev1.PodRunning, podCreated)},
			want: want{state: holderPodSeen, pod: seenRunning, reads: []string{"runner-7"}},
		},
		"the record of another lock is not built on, the Pod done: never the holder": {
			reading: lockReading{held: true, holder: bob}, seenLock: &backendsv1alpha1.LockInfo{ID: "lock-0", Who: "runner@runner-7"}, seenPod: seenGone,
			pods: []client.Object{holderPod("uid-7", corev1.PodSucceeded, podCreated)},
			want: want{state: holderPodNotHolder, evidence: podEvidence{refusal: podNeverSeenRunning, phase: corev1.PodSucceeded}, reads: []string{"runner-7"}},
		},
		"a Pod that finished before the lock was taken, never seen running: left alone": {
			reading: lockReading{held: true, holder: bob}, seenLock: bob,
			pods: []client.Object{finishedAt(holderPod("uid-7", corev1.PodSucceeded, podCreated), lockTaken.Add(-3*time.Second))},
			want: want{state: holderPodNotHolder, evidence: podEvidence{refusal: podFinishedBeforeLock, at: lockTaken.Add(-3 * time.Second), phase: corev1.PodSucceeded},
				reads: []string{"runner-7"}},
		},
		"a Pod created after the lock was taken, since deleted: left alone": {
			reading: lockReading{held: true, holder: bob}, seenLock: bob,
			pods: []client.Object{holderPod("uid-decoy", corev1.PodSucceeded, lockTaken.Add(25*time.Second))},
			want: want{state: holderPodNotHolder, evidence: podEvidence{refusal: podCreatedAfterLock, at: lockTaken.Add(25 * time.Second), phase: corev1.PodSucceeded},
				reads: []string{"runner-7"}},
		},
		"a Pod never seen, gone: left alone": {
			reading: lockReading{held: true, holder: bob}, seenLock: bob,
			want: want{state: holderPodUnseen, reads: []string{"runner-7"}},
		},
		"a hostname that is no Pod name is not even read": {
			reading: lockReading{held: true, holder: &backendsv1alpha1.LockInfo{ID: "lock-1", Who: "alice@Alices-MacBook"}},
			want:    want{state: holderNotAPod},
		},
		"a Pod that cannot be read: the record is kept, nothing released": {
			reading: lockReading{held: true, holder: bob}, seenLock: bob, seenPod: seenGone,
			getErr: apierrors.NewForbidden(corev1.Resource("pods"), "runner-7", errors.New("no RBAC")),
			want:   want{state: holderPodUnreadable, pod: seenGone, reads: []string{"runner-7"}, errSaying: "forbidden"},
		},
		"forceUnlock naming the holder releases it, the Pod running": {
			reading: lockReading{held: true, holder: bob}, forceUnlock: "lock-1", seenLock: bob, seenPod: seenRunning,
			pods: []client.Object{holderPod("uid-7", corev1.PodRunning, podCreated)},
			want: want{state: holderPodSeen, pod: seenRunning, released: []string{"lock-1"}, reads: []string{"runner-7"}},
		},
		"forceUnlock naming the holder, policy off": {
			reading: lockReading{held: true, holder: bob}, forceUnlock: "lock-1", policyOff: true,
			want: want{released: []string{"lock-1"}},
		},
		"policy off: nothing read, nothing released": {
			reading: lockReading{held: true, holder: bob}, policyOff: true, seenLock: bob, seenPod: seenGone,
		},
		"the operator's own lock check": {
			reading: lockReading{held: true, holder: bob, ownErr: errors.New("unlock failed")}, seenLock: bob, seenPod: seenGone,
		},
		"a holder whose lock information cannot be read": {
			reading: lockReading{held: true},
		},
		"a holder without ID": {
			reading: lockReading{held: true, holder: &backendsv1alpha1.LockInfo{Who: "runner@runner-7"}},
		},
		"a free lock": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var reads []string
			pods := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(tc.pods...).WithInterceptorFuncs(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if _, ok := obj.(*corev1.Pod); !ok || key.Namespace != harnessNamespace {
						t.Errorf("read %T %s, want only Pods of %s", obj, key, harnessNamespace)
					}
					reads = append(reads, key.Name)
					if tc.getErr != nil {
						return tc.getErr
					}
					return c.Get(ctx, key, obj, opts...)
				},
				List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
					t.Errorf("listed: the manager may only get Pods")
					return nil
				},
			}).Build()
			var check *holderCheck
			if !tc.policyOff {
				check = &holderCheck{pods: pods, namespace: harnessNamespace, grace: grace, clock: clocktesting.NewFakePassiveClock(now),
					lock: tc.seenLock, pod: tc.seenPod}
			}
			var released []string
			r := tc.reading
			settleHeldLock(t.Context(), &r, tc.forceUnlock, check, func(_ context.Context, id string, _ bool) error {
				released = append(released, id)
				return nil
			})
			got := want{state: r.sighting.state, pod: r.sighting.pod, evidence: r.sighting.evidence, released: released, gone: r.goneRelease, reads: reads,
				errSaying: tc.want.errSaying}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}, podEvidence{})); diff != "" {
				t.Errorf("settleHeldLock (-want +got):\n%s", diff)
			}
			if r.released != (len(released) > 0) {
				t.Errorf("reading.released = %v after %d releases", r.released, len(released))
			}
			if tc.want.errSaying != "" && (r.sighting.err == nil || !strings.Contains(r.sighting.err.Error(), tc.want.errSaying)) {
				t.Errorf("sighting error %v does not say %q", r.sighting.err, tc.want.errSaying)
			}
		})
	}
}
