package controllers

import (
	"context"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
	"github.com/infrastate/backend-operator/internal/history"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// historyMaxStateBytes bounds the states a history copies: the states a
// probe reads.
const historyMaxStateBytes = stateclient.DefaultMaxStateBytes

// historyListLimit bounds the objects a history lists under its prefix:
// the most snapshots retention keeps, and room for the objects someone
// else wrote there.
const historyListLimit = maxRetainCount + 1000

// maxRetainCount is the most snapshots a history keeps; defaultRetainCount
// those it keeps when spec.retain sets no bound.
const (
	maxRetainCount     = 1000
	defaultRetainCount = 50
)

// reconcileHistorySource resolves the source backend: how to read the
// workspace's state, and the lock holder its probe reports, recorded with
// the snapshot.
func (r *stateHistoryReconciler) reconcileHistorySource(ctx context.Context, s *historyScope) error {
	ref := s.h.Spec.BackendRef
	kind, backend, resolved, err := r.resolveBackendRef(ctx, s.h.Namespace, ref)
	if se, ok := conditions.AsStall(err); ok && se.Reason == backendsv1alpha1.BackendNotFoundReason {
		return conditions.Stall(se.Reason, "%s. The snapshots taken so far stay under %s: create the backend again, or point spec.backendRef at one that exists",
			se.Message, historyPrefix(s.h))
	}
	if err != nil {
		return err
	}
	s.source = stateOpener(resolved, workspaceOrDefault(s.h.Spec.Workspace), ref)
	s.failures = kind.failures()
	s.holder = backend.SharedStatus().Lock
	s.inputs = append(append(identity(s.h), identity(backend)...), resolved.inputs()...)
	s.inputs = append(s.inputs, []byte(stateSeen(backend)))
	return nil
}

// reconcileHistoryDestination resolves the destination's CosBackend: its
// bucket and credentials, under the same reference policy as its own. A
// prefix another history of the same bucket writes to is a stall: their
// retentions would prune each other's snapshots.
func (r *reconciler) reconcileHistoryDestination(ctx context.Context, s *historyScope) error {
	name := s.h.Spec.Destination.CosBackendRef.Name
	dest := &backendsv1alpha1.CosBackend{}
	if err := r.getBackend(ctx, types.NamespacedName{Namespace: s.h.Namespace, Name: name}, dest, backendsv1alpha1.CosBackendKind); err != nil {
		if se, ok := conditions.AsStall(err); ok && se.Reason == backendsv1alpha1.BackendNotFoundReason {
			return conditions.Stall(se.Reason, "CosBackend %s, which spec.destination.cosBackendRef names, does not exist in namespace %s: create it, or name one that exists",
				name, s.h.Namespace)
		}
		return err
	}
	if err := r.checkPrefixFree(ctx, s.h, dest); err != nil {
		return err
	}
	resolved, err := cosKind{}.resolve(ctx, r.envFor(ctx, s.h.Namespace), dest)
	if err != nil {
		if se, ok := conditions.AsStall(err); ok {
			return conditions.Stall(backendsv1alpha1.BackendNotReadyReason, "The destination, CosBackend %s, cannot be used (%s): %s", name, se.Reason, se.Message)
		}
		return err
	}
	if assumeRoleOnly(dest) {
		return conditions.Stall(backendsv1alpha1.AssumeRoleNotSupportedReason, "The destination, CosBackend %s, cannot be written: %v", name, errAssumeRoleNotSupported)
	}
	cr := resolved.(*cosResolved)
	s.store = func() (history.Store, error) {
		cc, err := cr.client()
		if err != nil {
			return nil, conditions.Stall(backendsv1alpha1.BackendNotReadyReason, "The destination, CosBackend %s, cannot be used: %v", name, err)
		}
		return history.COSStore(cc), nil
	}
	s.inputs = append(s.inputs, identity(dest)...)
	s.inputs = append(s.inputs, resolved.inputs()...)
	return nil
}

// checkPrefixFree stalls h when an older history writes to the same
// bucket and prefix.
func (r *reconciler) checkPrefixFree(ctx context.Context, h *backendsv1alpha1.StateHistory, dest *backendsv1alpha1.CosBackend) error {
	list := &backendsv1alpha1.StateHistoryList{}
	if err := r.client.List(ctx, list, client.MatchingFields{historyPrefixIndex: historyPrefix(h)}); err != nil {
		return err
	}
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID == h.UID || !olderThan(other, h) {
			continue
		}
		otherDest := &backendsv1alpha1.CosBackend{}
		key := types.NamespacedName{Namespace: other.Namespace, Name: other.Spec.Destination.CosBackendRef.Name}
		if err := r.client.Get(ctx, key, otherDest); err != nil || otherDest.Spec.Bucket != dest.Spec.Bucket {
			continue
		}
		who := "StateHistory " + other.Name
		if other.Namespace != h.Namespace {
			who = "A StateHistory of another namespace"
		}
		return conditions.Stall(backendsv1alpha1.PrefixInUseReason, "%s already writes to prefix %s of bucket %s: set another spec.destination.prefix "+
			"(a prefix belongs to one history, whose retention prunes it)", who, historyPrefix(h), dest.Spec.Bucket)
	}
	return nil
}

// olderThan orders histories by creation, then by namespace and name.
func olderThan(a, b *backendsv1alpha1.StateHistory) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
}

// historyPrefixIndex indexes StateHistories by the prefix they write to.
const historyPrefixIndex = ".spec.destination.prefix"

// stateHistoryPrefix is the historyPrefixIndex extractor.
func stateHistoryPrefix(obj client.Object) []string {
	h, ok := obj.(*backendsv1alpha1.StateHistory)
	if !ok {
		return nil
	}
	return []string{historyPrefix(h)}
}

// reconcileSnapshots reads the source's state when a read is due and
// keeps it (see history.Take): off the reconcile path, streamed to a spool
// file, never held in memory. It writes the result to status.
func (r *stateHistoryReconciler) reconcileSnapshots(ctx context.Context, s *historyScope) error {
	h := s.h
	r.metrics.seedHistory(client.ObjectKeyFromObject(h), h.Status)
	task := probeTask{kind: backendsv1alpha1.StateHistoryKind, obj: h, inputs: fingerprint(s.inputs...),
		interval: historyInterval(h, r.opts.defaultProbeInterval), condition: backendsv1alpha1.SnapshotsReadyCondition}
	apply := func(res *probes.Result) error {
		read := res.Value.(historyRead)
		obs := applyHistoryRead(&h.Status, read, h.Spec.BackendRef, s.failures)
		conditions.Set(&h.Status.Conditions, h.Generation, backendsv1alpha1.SnapshotsReadyCondition, obs)
		r.metrics.observeHistory(client.ObjectKeyFromObject(h), h.Status, obs)
		return nil
	}
	start := func() (probes.Func, error) {
		stream, err := s.source()
		if err != nil {
			return nil, err
		}
		store, err := s.store()
		if err != nil {
			return nil, err
		}
		plan := history.Plan{Prefix: historyPrefix(h), Retention: historyRetention(h.Spec.Retain), MaxStateBytes: historyMaxStateBytes,
			ListLimit: historyListLimit, Now: r.opts.clock.Now}
		holder := s.holder.DeepCopy()
		return func(ctx context.Context) any { return takeSnapshot(ctx, stream, store, plan, holder) }, nil
	}
	step, err := r.advanceProbe(ctx, task, apply, start)
	s.requeueAfter, s.probePending, s.applied = step.requeueAfter, step.pending, step.ack
	return err
}

// historyRetention is the retention of spec.retain, with its defaults.
func historyRetention(spec *backendsv1alpha1.HistoryRetention) history.Retention {
	r := history.Retention{Count: defaultRetainCount}
	if spec == nil {
		return r
	}
	if spec.MaxAge != nil {
		r.MaxAge, r.Count = spec.MaxAge.Duration, maxRetainCount
	}
	if spec.Count != nil {
		r.Count = int(min(*spec.Count, maxRetainCount))
	}
	return r
}

// historyRead is what one read of a history's source did.
type historyRead struct {
	taken history.Taken
	err   error
	// holder is the lock holder the source's backend reported when the
	// read started.
	holder *backendsv1alpha1.LockInfo
}

// HeldBytes is what the read holds while it waits to be written to
// status: the snapshots it lists (see probes.Sizer).
func (r historyRead) HeldBytes() int64 {
	return int64(len(r.taken.Kept))*160 + int64(len(r.taken.Lineage))
}

// takeSnapshot keeps the source's state once, within probeTimeout (a
// 64 MiB state copied at a few MiB/s fits).
func takeSnapshot(ctx context.Context, stream stateStreamer, store history.Store, plan history.Plan, holder *backendsv1alpha1.LockInfo) historyRead {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	taken, err := history.Take(ctx, history.Source(stream), store, plan)
	return historyRead{taken: taken, err: err, holder: holder}
}

// readyHistoryMessage is a StateHistory's Ready message when it keeps the
// newest state it read.
func readyHistoryMessage(h *backendsv1alpha1.StateHistory) string {
	if len(h.Status.Snapshots) == 0 {
		return "No state to keep yet"
	}
	newest := h.Status.Snapshots[0]
	return "Serial " + strconv.FormatInt(newest.Serial, 10) + " is kept, with " + strconv.Itoa(int(h.Status.SnapshotCount)-1) + " older snapshots"
}

// containsSerial reports whether snapshots hold one of lineage and serial.
func containsSerial(snapshots []history.Snapshot, lineage string, serial uint64) bool {
	return slices.ContainsFunc(snapshots, func(s history.Snapshot) bool { return s.Lineage == lineage && s.Serial == serial })
}
