package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// lockPolicy.releaseWhenHolderGone, applied by a probe that saw the lock
// held: Terraform's LockInfo Who is user@hostname, and a runner pod's
// hostname is its name. The probe reads the Pod of that name in the
// backend's namespace, records what it saw in status.holderPod, and
// releases the lock, naming the holder's ID it has just read, once the
// Pod the controller saw running while that lock was held has been
// finished or gone for the grace period. The rules that keep it safe:
//
//   - a hostname that is not a DNS-1123 subdomain, or names no Pod that
//     the controller saw Running or Pending (with its UID) after this same
//     lock was taken, is never touched: a laptop's hostname, or a runner
//     pod deleted or finished before any probe saw it running, looks the
//     same;
//   - a Pod created after the lock was taken, or whose containers finished
//     before it was, is never the holder's (see holderEvidence): a Pod
//     named after a holder outside the cluster cannot pose as it;
//   - the record belongs to the lock status.lock names, and is written
//     with it from the same reading: a probe builds on it only when the
//     holder it reads is that lock (ID, Who and Created);
//   - a Pod of the same name with another UID means the one seen is gone;
//   - a Pending, Running or Unknown Pod is never released;
//   - the release is the one forceUnlock.lockID uses (see
//     releaseNamedLock, cos.Client.ReleaseLock), of the ID read in the same
//     probe, which the server checks once more.
//
// The Pod is read with the reconciler's API reader (one GET, never a
// cache or a list: the manager may only get Pods).

// holderPodGone is status.holderPod.phase once the Pod seen is deleted.
const holderPodGone = "Gone"

// holderCheck is what a probe needs to apply releaseWhenHolderGone, taken
// from the backend when the probe is submitted. A nil *holderCheck applies
// nothing: the policy is off.
type holderCheck struct {
	// pods reads the Pods of namespace: the reconciler's API reader.
	pods      client.Reader
	namespace string
	// grace is lockPolicy.gracePeriod in effect.
	grace time.Duration
	clock clock.PassiveClock
	// lock and pod are status.lock and status.holderPod when the probe was
	// submitted: what earlier probes saw.
	lock *backendsv1alpha1.LockInfo
	pod  *backendsv1alpha1.HolderPod
}

// newHolderCheck returns the holderCheck of obj under policy for a probe
// submitted now, or nil when policy does not release gone holders.
func newHolderCheck(env kindEnv, obj backendObject, policy *backendsv1alpha1.LockPolicy) *holderCheck {
	if !releasesGoneHolders(policy) {
		return nil
	}
	status := obj.SharedStatus()
	return &holderCheck{
		pods: env.refs.reader, namespace: obj.GetNamespace(),
		grace: gracePeriod(policy), clock: env.clock,
		lock: status.Lock.DeepCopy(), pod: status.HolderPod.DeepCopy(),
	}
}

// holderState says what a probe learned of the holder's Pod.
type holderState int

const (
	// holderNotChecked: the policy is off, or the lock is not held by a
	// holder whose lock information could be read.
	holderNotChecked holderState = iota
	// holderNotAPod: the holder's Who has no hostname that can be a Pod
	// name.
	holderNotAPod
	// holderPolicyUnsupported: the state server does not let the operator
	// release only a gone holder's lock (err says why), so no Pod is
	// looked for.
	holderPolicyUnsupported
	// holderPodUnseen: no Pod of that name exists, and none was recorded
	// running while this lock was held.
	holderPodUnseen
	// holderPodNotHolder: a Pod of that name exists, but the lock was not
	// taken in it, or nothing shows it was (sighting.evidence says why).
	holderPodNotHolder
	// holderPodSeen: sighting.pod is the Pod seen.
	holderPodSeen
	// holderPodUnreadable: the Pod could not be read; sighting.pod is the
	// record of earlier probes, kept.
	holderPodUnreadable
)

// holderSighting is what a probe learned of the Pod of the lock's holder.
type holderSighting struct {
	state holderState
	// hostname is the hostname of the holder's Who.
	hostname string
	// pod is status.holderPod to write: nil when no Pod was seen.
	pod *backendsv1alpha1.HolderPod
	// err is why the Pod could not be read.
	err error
	// evidence is why the Pod of hostname is not the holder's
	// (holderPodNotHolder), and lockCreated the lock's Created it was
	// compared with.
	evidence    podEvidence
	lockCreated *metav1.Time
}

// see reads the Pod of holder's hostname and returns what to record of
// it.
func (c *holderCheck) see(ctx context.Context, holder *backendsv1alpha1.LockInfo) holderSighting {
	hostname, ok := holderHostname(holder.Who)
	if !ok {
		return holderSighting{state: holderNotAPod}
	}
	var prior *backendsv1alpha1.HolderPod
	if sameLock(c.lock, holder) && c.pod != nil && c.pod.Name == hostname {
		prior = c.pod
	}
	pod := &corev1.Pod{}
	err := c.pods.Get(ctx, types.NamespacedName{Namespace: c.namespace, Name: hostname}, pod)
	switch {
	case apierrors.IsNotFound(err):
		pod = nil
	case err != nil:
		return holderSighting{state: holderPodUnreadable, hostname: hostname, pod: prior, err: fmt.Errorf("reading Pod %s: %w", hostname, err)}
	}
	record, evidence := nextHolderPod(prior, hostname, holder.Created, pod, c.clock.Now())
	switch {
	case record != nil:
		return holderSighting{state: holderPodSeen, hostname: hostname, pod: record}
	case evidence.refusal != podCanHold:
		return holderSighting{state: holderPodNotHolder, hostname: hostname, evidence: evidence, lockCreated: holder.Created}
	}
	return holderSighting{state: holderPodUnseen, hostname: hostname}
}

// releasable reports whether the lock of the holder whose Pod is recorded
// in pod may be released at now: the controller saw that Pod (its UID)
// while the lock was held, and it has been finished or gone for grace.
func releasable(pod *backendsv1alpha1.HolderPod, grace time.Duration, now time.Time) bool {
	return pod != nil && pod.UID != "" && pod.GoneSince != nil && !now.Before(pod.GoneSince.Add(grace))
}

// holderHostname is the hostname of a LockInfo's Who (user@hostname):
// what follows its last '@', when it is a valid Pod name (a DNS-1123
// subdomain). A Who without '@' has none.
func holderHostname(who string) (string, bool) {
	at := strings.LastIndex(who, "@")
	if at < 0 {
		return "", false
	}
	host := who[at+1:]
	if len(validation.IsDNS1123Subdomain(host)) > 0 {
		return "", false
	}
	return host, true
}

// sameLock reports whether seen, status.lock as an earlier probe wrote
// it, is the lock holder: the same ID, Who and Created. Created is
// compared to the second, as status keeps it.
func sameLock(seen, holder *backendsv1alpha1.LockInfo) bool {
	if seen == nil || holder == nil || seen.ID == "" || seen.ID != holder.ID || seen.Who != holder.Who {
		return false
	}
	if (seen.Created == nil) != (holder.Created == nil) {
		return false
	}
	return seen.Created == nil || seen.Created.Unix() == holder.Created.Unix()
}

// nextHolderPod is status.holderPod after a probe that read pod (nil when
// there is none) under hostname at now, for the lock taken at
// lockCreated, given prior, the record of earlier probes of that same
// lock (nil when none). It is nil when no Pod was ever seen running: a Pod
// that is missing at first sight, or that holderEvidence refuses (created
// after the lock, finished before it, not Running or Pending at first
// sight), is not recorded, and its lock is never released; the evidence
// says why a Pod read is refused. A recorded Pod is refused too once its
// containers turn out to have finished before the lock was taken.
// goneSince is set the first time the Pod seen is finished, deleted or
// replaced by another of the same name, and kept after.
func nextHolderPod(prior *backendsv1alpha1.HolderPod, hostname string, lockCreated *metav1.Time, pod *corev1.Pod, now time.Time) (*backendsv1alpha1.HolderPod, podEvidence) {
	if prior != nil && prior.UID == "" {
		prior = nil
	}
	switch {
	case prior == nil && pod == nil:
		return nil, podEvidence{}
	case prior == nil:
		if e := holderEvidence(pod, hostname, lockCreated, now, false); e.refusal != podCanHold {
			return nil, e
		}
		// Running or Pending: not gone.
		return &backendsv1alpha1.HolderPod{Name: hostname, UID: string(pod.UID), Phase: string(pod.Status.Phase)}, podEvidence{}
	case pod == nil || string(pod.UID) != prior.UID:
		// Deleted, or deleted and replaced by another of the same name.
		return withGoneSince(&backendsv1alpha1.HolderPod{Name: prior.Name, UID: prior.UID, Phase: holderPodGone}, prior.GoneSince, now), podEvidence{}
	}
	if e := holderEvidence(pod, prior.Name, lockCreated, now, true); e.refusal != podCanHold {
		return nil, e
	}
	return withGoneSince(&backendsv1alpha1.HolderPod{Name: prior.Name, UID: prior.UID, Phase: string(pod.Status.Phase)}, prior.GoneSince, now), podEvidence{}
}

// withGoneSince sets p.GoneSince when p's phase says the Pod is done: to
// since when it already was, to now otherwise. A Pod that is not done has
// none.
func withGoneSince(p *backendsv1alpha1.HolderPod, since *metav1.Time, now time.Time) *backendsv1alpha1.HolderPod {
	switch corev1.PodPhase(p.Phase) {
	case corev1.PodSucceeded, corev1.PodFailed, holderPodGone:
		if since == nil {
			t := metav1.NewTime(now.Truncate(time.Second))
			since = &t
		}
		p.GoneSince = since.DeepCopy()
	}
	return p
}

// holderNote is the sentence of the Locked message that says what
// releaseWhenHolderGone makes of the holder: "" when the policy is off.
// It changes only when what was seen changes, not at every probe.
func holderNote(s holderSighting, grace time.Duration) string {
	switch s.state {
	case holderNotChecked:
		return ""
	case holderNotAPod:
		return " Its holder's Who has no hostname that can name a Pod, so lockPolicy.releaseWhenHolderGone leaves it alone."
	case holderPolicyUnsupported:
		return fmt.Sprintf(" lockPolicy.releaseWhenHolderGone cannot work on this state server: %v (see status.server), so it leaves the lock alone.", s.err)
	case holderPodUnseen:
		return fmt.Sprintf(" Its holder's hostname %s names no Pod of this namespace that the operator saw Running or Pending after the lock was taken, "+
			"so lockPolicy.releaseWhenHolderGone leaves it alone.", s.hostname)
	case holderPodNotHolder:
		return refusalNote(s.hostname, s.evidence, s.lockCreated)
	case holderPodUnreadable:
		return fmt.Sprintf(" Its holder's Pod cannot be read (%v); the lock is not released while it cannot.", s.err)
	case holderPodSeen:
		p := s.pod
		if p.GoneSince == nil {
			return fmt.Sprintf(" Its holder runs in Pod %s (%s); the lock is released only once that Pod has finished or is gone for %s.", p.Name, p.Phase, grace)
		}
		return fmt.Sprintf(" Its holder ran in Pod %s, which has been %s since %s: the lock is released at the first probe after %s.",
			p.Name, podDoneAs(p.Phase), p.GoneSince.UTC().Format(time.RFC3339), p.GoneSince.Add(grace).UTC().Format(time.RFC3339))
	}
	return ""
}

// podDoneAs says how a Pod of phase is done, for messages: its phase,
// or "gone".
func podDoneAs(phase string) string {
	if phase == holderPodGone {
		return "gone"
	}
	return phase
}

// holderReleaseAt is when releaseWhenHolderGone releases the lock
// status.lock names, whose holder's Pod status.holderPod has recorded
// gone; zero when it does not. The probe that releases it must run then
// (see reconcileProbe), not an interval later.
func holderReleaseAt(status *backendsv1alpha1.BackendStatus, policy *backendsv1alpha1.LockPolicy) time.Time {
	p := status.HolderPod
	if !releasesGoneHolders(policy) || status.Lock == nil || p == nil || p.UID == "" || p.GoneSince == nil {
		return time.Time{}
	}
	return p.GoneSince.Add(gracePeriod(policy))
}
