package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/owned"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
	"github.com/infrastate/backend-operator/controllers/internal/related"
)

// reconciler holds what every reconciler of this package uses.
type reconciler struct {
	client    client.Client
	apiReader client.Reader
	// metadata reads the metadata of the Secrets and ConfigMaps related
	// to the objects of this API, as related.Watches hold them (without
	// annotations but the content hash and stored size: kubectl's
	// last-applied-configuration copy of a Secret's data is never kept):
	// related.Reader once set up, the client before (tests).
	metadata client.Reader
	events   events.EventRecorder
	opts     options
	// contents are the contents of the referenced Secrets and ConfigMaps
	// read so far, shared by the reconcilers SetupAll sets up.
	contents *related.Contents
	// renders are the memos of the backends' last renders.
	renders *owned.Memos
	// written are the versions of the objects the reconciler wrote.
	written  *owned.Versions
	schedule *probes.Schedule
	// probes runs the probes of this kind, and of the others when the
	// reconcilers are set up together (SetupAll).
	probes *probes.Pool
	// wake receives an event when a probe ends, to reconcile its object.
	wake chan ctrlevent.GenericEvent
	// metrics are the series the reconciler records.
	metrics *operatorMetrics
	// transitions are the events the kind emits for its status changes
	// (transitionEvents unless the kind's constructor sets its own).
	transitions eventsFunc
	// forgetMetrics removes the series of an object of the kind that is
	// gone; nil when the kind serves none.
	forgetMetrics func(key types.NamespacedName)
	// shardMoves are the objects the reconciler's objects name that
	// another shard holds, and since when (see checkOtherShard).
	shardMoves *shardMoves
}

// conflictRetryAfter is the wait before reconciling again an object whose
// status patch met a newer object: time for the cache to catch up.
const conflictRetryAfter = 200 * time.Millisecond

// wakeBuffer bounds the probe-end events waiting for a controller.
const wakeBuffer = 1024

func newReconciler(c client.Client, apiReader client.Reader, recorder events.EventRecorder, opts []Option) reconciler {
	o := newOptions(opts)
	pool := o.prober
	if pool == nil {
		pool = probes.NewPool(o.maxConcurrentProbes, o.maxConcurrentProbesPerNamespace, o.clock, probes.WithMemory(o.tenantBudgets.readMemory))
	}
	contents := o.contents
	if contents == nil {
		contents = related.NewContents()
	}
	return reconciler{
		client:    c,
		apiReader: apiReader,
		metadata:  c,
		events:    recorder,
		opts:      o,
		contents:  contents,
		written:   owned.NewVersions(),
		renders:   owned.NewMemos(),
		schedule:  probes.NewSchedule(),
		probes:    pool,
		wake:      make(chan ctrlevent.GenericEvent, wakeBuffer),

		metrics:     o.metrics,
		transitions: transitionEvents,
		shardMoves:  newShardMoves(),
	}
}

// setup prepares the reconciler to run with mgr: it reads metadata from
// the related watches SetupAll runs, runs its prober (unless SetupAll shares one it added), and
// returns b watching the ends of its probes.
func (r *reconciler) setup(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
	if r.opts.related == nil {
		return nil, errors.New("the reconcilers are set up by SetupAll, which watches the Secrets and ConfigMaps they read")
	}
	r.metadata = related.Reader{Watches: r.opts.related}
	if r.opts.prober == nil {
		if err := mgr.Add(r.probes); err != nil {
			return nil, fmt.Errorf("adding the prober: %w", err)
		}
	}
	return b.WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{})), nil
}

// owned.Writer writes the objects the reconciler renders or publishes.
func (r *reconciler) ownedWriter() owned.Writer {
	return owned.Writer{Client: r.client, Reader: r.apiReader, Metadata: r.metadata, Versions: r.written, Ledger: r.opts.tenantBudgets.stored}
}

// rewriter is ownedWriter for an owner whose status says whether it
// wrote its objects before (writtenBefore): a shard's watches hold the
// objects of the owners in its cache only, so that an owner that moved in
// from another shard has them read before they are created (see
// owned.Writer.WrittenBefore).
func (r *reconciler) rewriter(writtenBefore bool) owned.Writer {
	w := r.ownedWriter()
	w.WrittenBefore = r.opts.sharded() && writtenBefore
	return w
}

// outcome is how a reconciliation's phases ended: what Ready, Reconciling
// and Stalled are summarized from (see conditions.Summarize), and the probe
// result the phases wrote to status.
type outcome struct {
	conditions.Outcome
	// applied is the probe result this reconciliation wrote to status; it
	// is acknowledged once the status is patched.
	applied *probes.Result
}

// phasesFunc runs a kind's phases on obj and returns how they ended and
// when to come back.
type phasesFunc func(ctx context.Context) (outcome, time.Duration, error)

// reconcile is the shape every Reconcile of this package shares: read the
// object (forgetting one that is gone), leave one being deleted to the
// garbage collector, mark a new generation as Reconciling, run the phases,
// and finish with one status patch. A probe result the phases wrote is
// acknowledged only once the patch succeeded: after an error the next
// attempt writes the same result again.
func (r *reconciler) reconcile(ctx context.Context, req ctrl.Request, obj statusObject, kind string, run phasesFunc) (ctrl.Result, error) {
	if found, err := r.get(ctx, req, obj, kind); !found {
		return ctrl.Result{}, err
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}
	return r.reconcileObject(ctx, req, obj, kind, run)
}

// get reads the object of req into obj. An object that is gone is
// forgotten: its probe, schedule, writes, refused writes and metrics.
func (r *reconciler) get(ctx context.Context, req ctrl.Request, obj client.Object, kind string) (found bool, err error) {
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(kind, req.NamespacedName)
		}
		return false, client.IgnoreNotFound(err)
	}
	return true, nil
}

// forget drops what the reconciler keeps of an object that is gone.
func (r *reconciler) forget(kind string, key types.NamespacedName) {
	r.schedule.Forget(key)
	r.written.Forget(owned.WriterKey{Kind: kind, NamespacedName: key})
	r.renders.Forget(owned.WriterKey{Kind: kind, NamespacedName: key})
	r.opts.tenantBudgets.stored.Forget(owned.WriterKey{Kind: kind, NamespacedName: key})
	r.probes.Forget(probes.Key{Kind: kind, NamespacedName: key})
	if r.forgetMetrics != nil {
		r.forgetMetrics(key)
	}
}

// reconcileObject runs the phases on obj, read and not being deleted (see
// reconcile).
func (r *reconciler) reconcileObject(ctx context.Context, req ctrl.Request, obj statusObject, kind string, run phasesFunc) (ctrl.Result, error) {
	before := obj.DeepCopyObject().(statusObject)
	conditions.MarkReconciling(obj.StatusConditions(), obj.GetGeneration(), *obj.StatusObservedGeneration())
	out, after, err := run(ctx)
	if wait, ok := errors.AsType[*shardWaitError](err); ok {
		// Nothing to write while an object moves between shards: its
		// arrival, or the grace's end, says more.
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for a referenced object moving between shards", "reason", wait.Error())
		return requeueAfter(wait.after), nil
	}
	if err := finishReconcile(ctx, r.client, r.events, r.transitions, obj, before, out.Outcome, err); err != nil {
		if apierrors.IsConflict(err) {
			// The object changed since it was read (often the cache had
			// not caught up with a write of ours yet): an expected race,
			// not an error. Nothing is lost: the probe schedule stands,
			// and an unwritten probe result is written by the retry.
			ctrl.LoggerFrom(ctx).V(1).Info("The object changed while it was reconciled; reconciling it again")
			return ctrl.Result{RequeueAfter: conflictRetryAfter}, nil
		}
		return ctrl.Result{}, err
	}
	if out.applied != nil {
		r.probes.Ack(probes.Key{Kind: kind, NamespacedName: req.NamespacedName}, out.applied)
	}
	return requeueAfter(after), nil
}

// runPhases runs phases in order on scope and stops at the first error.
func runPhases[S any](ctx context.Context, scope *S, phases ...func(context.Context, *S) error) error {
	for _, phase := range phases {
		if err := phase(ctx, scope); err != nil {
			return err
		}
	}
	return nil
}

// references returns the reader of the references of an object in
// namespace.
func (r *reconciler) references(namespace string) referenceReader {
	return referenceReader{reader: r.apiReader, metadata: r.metadata, contents: r.contents, namespace: namespace, policy: r.opts.referencePolicy}
}

// envFor is the environment a kind resolves an object of namespace with.
func (r *reconciler) envFor(ctx context.Context, namespace string) kindEnv {
	return r.envForTenant(ctx, namespace, namespace)
}

// envForTenant is the environment a kind resolves an object of namespace
// with, for reads that tenant's shares and circuits pay for: a RemoteState
// reading a backend of another namespace reads its references there, as
// the backend itself does, and pays for the read itself.
func (r *reconciler) envForTenant(ctx context.Context, namespace, tenant string) kindEnv {
	return kindEnv{refs: r.references(namespace), tenant: tenant, clock: r.opts.clock, stateClients: r.opts.stateClientsIn(tenant), cosClients: r.opts.cosClientsIn(tenant),
		cosDefaultRegion: r.opts.cosDefaultRegion, decryptions: r.opts.decryptions, derivations: r.opts.tenantBudgets.keyDerivation,
		metrics: r.metrics, log: ctrl.LoggerFrom(ctx)}
}
